package soak

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteReport renders docs/reliability.md from a soak's results.
func WriteReport(w io.Writer, r *Results) error {
	var b bytes.Buffer
	writeReportHeader(&b, r)
	writeLoadSection(&b, r)
	writeFaultSection(&b, r)
	writeHASection(&b, r)
	writeFuzzSection(&b, r)
	writeBadInputSection(&b, r)
	writeIRFloodSection(&b, r)
	writeVerdict(&b, r)
	_, err := w.Write(b.Bytes())
	return err
}

func writeReportHeader(b *bytes.Buffer, r *Results) {
	o := r.Options
	m := r.Machine
	b.WriteString("# Reliability\n\n")
	b.WriteString("<!-- Written by `make soak` (hack/soak, internal/soak). Do not edit: run it again. -->\n\n")
	fmt.Fprintf(b, "Measured on %s, in %s (builds and fuzzing excluded), on %s with %d logical CPUs and %s of memory (Linux %s; harness built with %s).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second), m.CPU, m.CPUs, formatMemory(m.MemoryBytes), m.Kernel, m.GoVersion)
	for _, name := range o.Binaries {
		info := r.Binaries[name]
		what := "Portcullis's kube-apiserver"
		if name == Stock {
			what = "upstream's kube-apiserver built from the same module graph (kube-apiserver-stock)"
		}
		fmt.Fprintf(b, "- **%s**: `%s`, %s, from k8s.io/kubernetes %s\n", name, info.Version, what, info.Module)
	}
	b.WriteString("\n")
	fsync := "with fsync (a crash of the machine would keep what it acknowledged too)"
	if !o.Load.EtcdFsync {
		fsync = "without fsync (`--unsafe-no-fsync`: a killed process still loses nothing, the kernel keeps its writes)"
	}
	fmt.Fprintf(b, "Every run starts a fresh single-member etcd on loopback, %s, and a server on it: ours with every plugin of ours enabled (%s; PodSecurityPolicy with the example `%s` policy, whose `use` the load's user is granted through RBAC) and our webhook dispatch with circuit breakers and a time budget (its `make run` configuration); stock with its default chain. Both get the same four HTTPS webhooks on 127.0.0.1 over pod creates in the load's namespace: a mutating one with `failurePolicy: Fail` and one with `Ignore`, each adding an annotation of its own, a validating one with `Fail` that refuses the pods carrying a marker label, and a validating one with `Ignore` that allows everything.\n\n",
		fsync, "`"+strings.Join(ourPluginNames(), "`, `")+"`", grantedPolicy)
	fmt.Fprintf(b, "The load is %s pod creates from %d client-go clients, each on its own connection, in a closed loop, as a user that is not an admin (so RBAC, priority and fairness and PodSecurityPolicy apply); every %dth pod carries the marker and is refused by design. Each name is sent once; a client pauses after a failed create (%s, doubling up to %s) as real clients do. Every acknowledgement (201 and its uid) and every error (status, reason, message) is recorded. Afterwards the pods are listed through the server and read from etcd itself with etcd's client (`%s/pods/<namespace>/`, the stored protobuf decoded): **lost** counts acknowledged pods missing from etcd or stored with another uid, **refused but stored** pods refused before any write (a 4xx, or a failed webhook call) that etcd holds anyway; both must be 0, and every acknowledged pod must carry the `Fail` mutating webhook's annotation. Latency percentiles come from a histogram with buckets 1%% wide, over the acknowledged creates; the maximum is exact.\n\n",
		thousands(o.Load.Pods), o.Load.Clients, o.Load.RefuseEvery, o.Load.Backoff, o.Load.MaxBackoff, etcdPrefix)
}

func writeLoadSection(b *bytes.Buffer, r *Results) {
	b.WriteString("## 1. Load\n\n")
	if len(r.Loads) == 0 {
		b.WriteString("Not run.\n\n")
		return
	}
	b.WriteString("No fault: the load alone, on each server.\n\n")
	b.WriteString("| server | sent | acknowledged | refused by design | failed otherwise (by reason) | lost | refused but stored | creates per second | p50 | p99 | max | panics in the logs |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range r.Loads {
		l := run.Load
		refused, failed := splitFailures(l)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d | %d | %.0f | %s | %s | %s | %d |\n",
			run.Binary, thousands(len(l.Outcomes)-l.Unsent()), thousands(l.Acked()), thousands(refused), failed,
			run.Verification.Lost, run.Verification.RefusedStored, l.Throughput(),
			formatLatency(l.Latencies.Percentile(50)), formatLatency(l.Latencies.Percentile(99)), formatLatency(l.Latencies.Max()), run.Panics.Count)
	}
	b.WriteString("\n")
	writeChecks(b, r.Loads)
}

// splitFailures returns the refusals by design and the other failures, grouped by reason.
func splitFailures(l *LoadResult) (refused int, others string) {
	failures := l.Failures()
	var parts []string
	for _, key := range sortedKeys(failures) {
		n := failures[key]
		if strings.HasSuffix(key, ": refused by design") {
			refused += n
			continue
		}
		parts = append(parts, fmt.Sprintf("%d× %s", n, escapeCell(key)))
	}
	if unsent := l.Unsent(); unsent > 0 {
		parts = append(parts, fmt.Sprintf("%d not sent (the run's timeout)", unsent))
	}
	if len(parts) == 0 {
		return refused, "0"
	}
	return refused, strings.Join(parts, "; ")
}

// writeChecks lists what the reads of etcd and of the server found beyond the table.
func writeChecks(b *bytes.Buffer, runs []*RunResult) {
	b.WriteString("| run | pods in etcd | listed by the server | acknowledged but not listed | without the Fail webhook's annotation | without the Ignore webhook's annotation | without PodSecurityPolicy's annotation | failed, yet stored | stored, never sent | undecodable |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range runs {
		v := run.Verification
		policy := fmt.Sprint(v.WithoutPolicy)
		if run.Binary != Ours {
			policy = "— (no such plugin)"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %d | %s | %d | %d | %d |\n", run.Name(), thousands(v.InEtcd), thousands(v.Listed),
			v.MissingFromList, v.WithoutFailMutation, v.WithoutIgnoreMutation, policy, v.FailedStored, v.Unexpected, v.Undecodable)
	}
	b.WriteString("\n*Failed, yet stored* are creates whose answer was lost or late (a timeout, a dropped connection) while the write went through: the client could not know, and a retry would find the pod. They are allowed; refused-but-stored ones are not.\n\n")
}

func writeFaultSection(b *bytes.Buffer, r *Results) {
	o := r.Options
	b.WriteString("## 2. Faults under load\n\n")
	if len(r.Faults) == 0 {
		b.WriteString("Not run.\n\n")
		return
	}
	fmt.Fprintf(b, "Each fault is a run of its own under the same load, on a fresh etcd and server, injected once %.0f%% of the creates are answered:\n\n", o.FaultAt*100)
	seen := map[FaultKind]bool{}
	for _, run := range r.Faults {
		if seen[run.Fault] || run.Window.Detail == "" {
			continue
		}
		seen[run.Fault] = true
		fmt.Fprintf(b, "- **%s**: %s.\n", run.Fault, run.Window.Detail)
	}
	b.WriteString("\n**Time to recover** runs from the fault's end to the answer of the first create that was sent after both the fault's end and the last unhealthy answer, and succeeded; every answer after it was healthy. A healthy answer is an acknowledgement, or for a marked pod the refusal by design; 0 means no create failed. *Lasted* is how long the fault was in force.\n\n")
	b.WriteString("| fault | server | lasted | sent | acknowledged | refused by design | failed otherwise (by reason) | lost | refused but stored | time to recover | p99 | max | panics in the logs |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range r.Faults {
		l := run.Load
		refused, failed := splitFailures(l)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %d |\n",
			run.Fault, run.Binary, formatWindow(run.Window), thousands(len(l.Outcomes)-l.Unsent()), thousands(l.Acked()), thousands(refused), failed,
			run.Verification.Lost, run.Verification.RefusedStored, formatRecovery(run.Recovery),
			formatLatency(l.Latencies.Percentile(99)), formatLatency(l.Latencies.Max()), run.Panics.Count)
	}
	b.WriteString("\n")
	writeChecks(b, r.Faults)
	b.WriteString("While the webhook server is down the server cannot call the `Ignore` mutating webhook and admits pods without its annotation, as `failurePolicy: Ignore` says; every admitted pod still carries the `Fail` webhook's. On ours, once a webhook's circuit breaker opens, it is not called until its next probe (1 s after opening, doubling while the webhook stays down): that wait is part of ours' time to recover.\n\n")
}

func formatWindow(w FaultWindow) string {
	if !w.Injected {
		return "**not injected** (the load ended first)"
	}
	return formatDuration(w.End.Sub(w.Start))
}

func formatRecovery(r Recovery) string {
	switch {
	case r.LoadEndedFirst:
		return "**the load ended before the fault did**"
	case !r.Recovered:
		return "**not recovered**"
	case !r.Disrupted:
		return "0 (no create failed)"
	default:
		return formatDuration(r.After)
	}
}

func writeHASection(b *bytes.Buffer, r *Results) {
	b.WriteString("## 3. HA\n\n")
	if r.HA == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	writeHA(b, r.HA)
}

func writeFuzzSection(b *bytes.Buffer, r *Results) {
	b.WriteString("## 4. Fuzzing\n\n")
	if r.Fuzz == nil || len(r.Fuzz.Targets) == 0 {
		b.WriteString("Not run (no report from `hack/fuzz.sh`).\n\n")
		return
	}
	b.WriteString("Every Go fuzz target of the module (`func FuzzXxx` beside the unit tests), run by `hack/fuzz.sh` before the soak, one after the other. A failed target fails `make soak` once this page is written; its crasher stays under the package's `testdata/fuzz/` as a seed.\n\n")
	b.WriteString("| package | target | executions | time fuzzed | result |\n|---|---|---|---|---|\n")
	var total int64
	for _, t := range r.Fuzz.Targets {
		total += t.Executions
		result := t.Result
		switch result {
		case "":
			result = "—"
		case "ok":
		default:
			result = "**" + result + "**"
		}
		fmt.Fprintf(b, "| `%s` | `%s` | %s | %s | %s |\n", escapeCell(t.Package), escapeCell(t.Target), thousands64(t.Executions), escapeCell(t.Time), escapeCell(result))
	}
	fmt.Fprintf(b, "\n%d targets, %s executions in all.\n\n", len(r.Fuzz.Targets), thousands64(total))
}

func writeBadInputSection(b *bytes.Buffer, r *Results) {
	b.WriteString("## 5. Bad inputs\n\n")
	ours := r.BadInputs[Ours]
	if ours == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	stock := r.BadInputs[Stock]
	stockByName := map[string]BadInputResult{}
	if stock != nil {
		stockByName = stock.byName()
	}
	b.WriteString("Malformed requests (`internal/soak/badinput.go`), each sent as it is by an admin to a fresh server: ours with every plugin " +
		"of ours enabled, stock with its defaults and the PodPreset CRD installed, so that the custom-resource cases take the same path. " +
		"Each should get a clear 4xx. Where ours answers otherwise, stock must give the same answer to the same request (or, for " +
		"PodSecurityPolicy, which stock does not serve, to its twin on a resource stock serves): that answer is upstream's code, not ours. " +
		"Ours must panic on no request stock does not panic on.\n\n")
	verdicts := map[string]int{}
	for _, res := range ours.Results {
		verdict, _, _ := badInputVerdict(res, stockByName)
		verdicts[verdict]++
	}
	b.WriteString("| server | cases | clear 4xx | upstream's answer, stock's too | not clear, ours only | panics in the log (requests) |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| ours | %d | %d | %d | %d | %d (%s) |\n", len(ours.Results), verdicts[verdictClear], verdicts[verdictUpstream], verdicts[verdictOurs],
		ours.Panics.Count, listOrNone(sortedKeys(ours.Panics.Requests)))
	if stock != nil {
		fmt.Fprintf(b, "| stock | %d | %d | — | — | %d (%s) |\n", len(stock.Results), stock.Clear(), stock.Panics.Count, listOrNone(sortedKeys(stock.Panics.Requests)))
	}
	b.WriteString("\n| case | plugin | ours | stock | verdict |\n|---|---|---|---|---|\n")
	answer := func(res BadInputResult, ok bool) string {
		switch {
		case !ok:
			return "—"
		case res.Status == 0:
			return "no answer"
		default:
			return strings.TrimSpace(fmt.Sprintf("%d %s", res.Status, res.Reason))
		}
	}
	for _, res := range ours.Results {
		verdict, stockAnswer, compared := badInputVerdict(res, stockByName)
		stockCell := answer(stockAnswer, compared)
		if compared && res.Case.Twin != "" {
			stockCell += " (" + res.Case.Twin + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", escapeCell(res.Case.Name), escapeCell(res.Case.Plugin), escapeCell(answer(res, true)), escapeCell(stockCell), verdict)
	}
	b.WriteString("\n")
}

func writeVerdict(b *bytes.Buffer, r *Results) {
	b.WriteString("## Verdict\n\n")
	failures := r.Failures()
	if len(failures) == 0 {
		b.WriteString("Every run kept every acknowledged pod, stored no refused pod, recovered from its fault, and logged no panic; every malformed request got a clear 4xx from ours, or the same answer stock gives it, and ours panicked on no request stock does not panic on.")
		if r.IRFlood != nil {
			b.WriteString(" Under the flood of distinct images, InitialResources kept the server's goroutines and RSS within their ceilings.")
		}
		b.WriteString("\n")
		return
	}
	b.WriteString("Problems found:\n\n")
	for _, f := range failures {
		fmt.Fprintf(b, "- %s\n", escapeCell(f))
	}
}

// Failures lists every check a run failed: lost or refused-but-stored pods, a fault not
// injected or not recovered from, a panic, a missing mutation or policy, and a marked pod
// admitted. Empty means the soak passed.
func (r *Results) Failures() []string {
	var out []string
	runs := append(append([]*RunResult{}, r.Loads...), r.Faults...)
	for _, run := range runs {
		out = append(out, run.failures()...)
	}
	if r.HA != nil {
		out = append(out, r.HA.failures()...)
	}
	if r.Fuzz != nil {
		for _, t := range r.Fuzz.Targets {
			if t.Result != "" && t.Result != "ok" {
				out = append(out, fmt.Sprintf("fuzzing: %s %s: %s", t.Package, t.Target, t.Result))
			}
		}
	}
	out = append(out, badInputFailures(r.BadInputs[Ours], r.BadInputs[Stock])...)
	if r.IRFlood != nil {
		out = append(out, r.IRFlood.failures()...)
	}
	if r.IRFloodUnbounded != nil {
		out = append(out, r.IRFloodUnbounded.ProofFailures()...)
	}
	return out
}

func (run *RunResult) failures() []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, run.Name()+": "+fmt.Sprintf(format, args...))
	}
	v := run.Verification
	if v.Lost > 0 {
		add("%d acknowledged pods lost (%s)", v.Lost, strings.Join(v.LostNames, ", "))
	}
	if v.RefusedStored > 0 {
		add("%d refused pods stored", v.RefusedStored)
	}
	if v.MissingFromList > 0 {
		add("%d acknowledged pods missing from the server's list", v.MissingFromList)
	}
	if v.WithoutFailMutation > 0 {
		add("%d acknowledged pods without the Fail mutating webhook's annotation", v.WithoutFailMutation)
	}
	if v.WithoutIgnoreMutation > 0 && run.Fault != FaultWebhookKill {
		add("%d acknowledged pods without the Ignore mutating webhook's annotation, with the webhook up", v.WithoutIgnoreMutation)
	}
	if v.WithoutPolicy > 0 {
		add("%d acknowledged pods without PodSecurityPolicy's annotation", v.WithoutPolicy)
	}
	if v.Unexpected > 0 || v.Undecodable > 0 {
		add("%d pods in etcd that no create sent, %d undecodable values", v.Unexpected, v.Undecodable)
	}
	for _, o := range run.Load.Outcomes {
		if o.Marked && o.Acked() {
			add("the marked pod %s was admitted", o.Name)
			break
		}
	}
	if u := run.Load.Unsent(); u > 0 {
		add("%d creates not sent within the run's timeout", u)
	}
	if run.Fault != "" && !run.Window.Injected {
		add("the fault was not injected: the load ended first")
	}
	switch {
	case run.Recovery.LoadEndedFirst:
		add("recovery not shown: the load ended before the fault did (more pods, or a shorter fault)")
	case !run.Recovery.Recovered:
		add("not recovered: no create sent after the fault's end and the last failure succeeded")
	}
	if run.Panics.Count > 0 {
		add("%d panics in the logs, the first: %s", run.Panics.Count, run.Panics.First[0])
	}
	return out
}

func formatLatency(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return formatDuration(d)
}

// formatDuration prints three significant digits in a unit that suits.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return significant(float64(d)/float64(time.Millisecond)) + " ms"
	default:
		return significant(d.Seconds()) + " s"
	}
}

func significant(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func formatMemory(bytes uint64) string {
	if bytes == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f GiB", float64(bytes)/(1<<30))
}

func thousands(n int) string { return thousands64(int64(n)) }

// thousands64 groups digits by three with commas: 10000 → "10,000".
func thousands64(n int64) string {
	s := fmt.Sprint(n)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var parts []string
	for len(s) > 3 {
		parts = append([]string{s[len(s)-3:]}, parts...)
		s = s[:len(s)-3]
	}
	parts = append([]string{s}, parts...)
	return sign + strings.Join(parts, ",")
}

// escapeCell keeps text from breaking a Markdown table row.
func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
