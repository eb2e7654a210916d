package bench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Headings of the four tables; the smoke test finds the tables by them.
const (
	HeadingDropIn   = "## 1. Drop-in cost: ours against stock kube-apiserver"
	HeadingPolicy   = "## 2. The same policy three ways"
	HeadingFanOut   = "## 3. Webhook fan-out"
	HeadingPlugins  = "## 4. Plugins: Go benchmarks"
	HeadingDispatch = "## 5. Webhook dispatch: ours against stock"
)

// Goals of the issue, reported against.
const (
	dropInTolerance = 0.05
	ignoredGoalNs   = 1000
	checkedGoalNs   = 5000
	// Table 5's goals: dispatch overhead per webhook, ours ÷ stock, and the latency an open
	// breaker adds.
	mutatingOverheadGoal   = 0.5
	validatingOverheadGoal = 0.8
	deadAddedP99Goal       = 0.001
	shadowAddedP99Goal     = 0.001
	// warnAddedSlack: a webhook in Warn may add its latency and this much more, at p50.
	warnAddedSlack = 0.010
	// disturbedShare is the share of the CPUs other processes may take before the notes
	// warn that they may have disturbed a table.
	disturbedShare = 0.05
)

// WriteMarkdown renders results as docs/benchmarks.md. It returns an error, writing nothing,
// if the results cannot be rendered (runs that cannot be paired, say).
func WriteMarkdown(w io.Writer, r *Results) error {
	if r.DropIn == nil || r.Policy == nil || r.FanOut == nil || r.Plugins == nil || r.Dispatch == nil {
		return fmt.Errorf("the results lack a table")
	}
	var b bytes.Buffer
	sections := []func(*bytes.Buffer, *Results) error{writeHeader, writeDropIn, writePolicy, writeFanOut, writePlugins, writeDispatch, writeNotes}
	for _, section := range sections {
		if err := section(&b, r); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteDispatchMarkdown renders table 5 alone (a run with OnlyDispatch).
func WriteDispatchMarkdown(w io.Writer, r *Results) error {
	if r.Dispatch == nil {
		return fmt.Errorf("no table 5 results to render")
	}
	var b bytes.Buffer
	if err := writeDispatch(&b, r); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeHeader(b *bytes.Buffer, r *Results) error {
	m := r.Machine
	fmt.Fprintf(b, "# Benchmarks\n\n")
	fmt.Fprintf(b, "<!-- Written by `make bench` (hack/bench, internal/bench). Do not edit: run it again. -->\n\n")
	fmt.Fprintf(b, "Measured on %s, in %s (builds excluded), on %s with %d logical CPUs and %s of memory (Linux %s; harness built with %s).\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second),
		m.CPUModel, m.CPUs, formatBytes(float64(m.MemoryBytes)), m.Kernel, m.GoVersion)
	fmt.Fprintf(b, "- **ours**: `%s` (%s), from k8s.io/kubernetes %s\n", r.Ours.Version, path.Base(r.Ours.Path), r.Ours.KubernetesModule)
	fmt.Fprintf(b, "- **stock**: upstream's kube-apiserver built from the same module graph (%s), from k8s.io/kubernetes %s\n\n",
		path.Base(r.Stock.Path), r.Stock.KubernetesModule)
	b.WriteString("Each figure is the median of repeated runs, with the range (min–max) in parentheses; ratios come first, " +
		"absolute figures after. Latency percentiles are exact (nearest rank) over every timed request of a run. " +
		"Pod creates come from client-go clients, each on its own connection, in a closed loop: each client sends its next " +
		"create as soon as the last is answered. Servers, etcd, webhooks and clients share the machine's CPUs, on loopback. " +
		"See the notes at the end before reading anything into small differences.\n\n")
	return nil
}

func writeDropIn(b *bytes.Buffer, r *Results) error {
	d := r.DropIn
	o := d.Options
	fmt.Fprintf(b, "%s\n\n", HeadingDropIn)
	fmt.Fprintf(b, "Both binaries with the same flags (a single-node control plane: client-certificate authentication, Node and RBAC "+
		"authorization), each start on a fresh etcd; %d starts of each, alternating which goes first in a round. After each "+
		"start: %s untimed warm-up creates, then %s timed pod creates from %s through the default admission chain; then "+
		"%s pods are created in another namespace and %d consistent LISTs of them are timed one after the other (after 2 "+
		"untimed; the body is read, not decoded); then %d watches are opened on an empty namespace's pods, spread over the "+
		"clients' connections, %s pods are created there and the fan-out is timed until every watch has seen every create. "+
		"Server CPU is its user and system time from `/proc/<pid>/stat`, read around the timed work. Ratios are ours ÷ stock, "+
		"paired by round. Ours is compiled with its PGO profile (`cmd/kube-apiserver/default.pgo`, from `make pgo-profile`); "+
		"stock, like upstream's release, without one.\n\n",
		o.Starts, thousands(o.Load.WarmUp), thousands(o.Load.Creates), clients(o.Load.Clients),
		thousands(o.ListPods), o.Lists, o.Watchers, thousands(o.WatchCreates))
	b.WriteString("| measure | ours ÷ stock | ours | stock | goal | met |\n|---|---|---|---|---|---|\n")
	type metric struct {
		name   string
		value  func(DropInRun) float64
		format func(Summary) string
		goal   ratioGoal
		// cpu marks the figures read from /proc's CPU time.
		cpu bool
	}
	seconds := func(d time.Duration) float64 { return d.Seconds() }
	cpuSeconds := func(s Summary) string {
		return withRange(s, func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }) + " s"
	}
	metrics := []metric{
		{"start → /readyz", func(r DropInRun) float64 { return seconds(r.ReadyAfter) }, formatSeconds, within5, false},
		{"RSS at /readyz", func(r DropInRun) float64 { return float64(r.RSSReady) }, formatBytesSummary, within5, false},
		{fmt.Sprintf("RSS after %s pod creates", thousands(o.Load.WarmUp+o.Load.Creates)), func(r DropInRun) float64 { return float64(r.RSSAfterLoad) }, formatBytesSummary, within5, false},
		{"server CPU per 1,000 pod creates", DropInRun.CPUPerThousandCreates, cpuSeconds, noiseGoal, true},
		{"pod creates per second", func(r DropInRun) float64 { return r.Load.Throughput() }, formatRate, noiseGoal, false},
		{"p50 create latency", func(r DropInRun) float64 { return seconds(r.Load.P50()) }, formatSeconds, noiseGoal, false},
		{"p99 create latency", func(r DropInRun) float64 { return seconds(r.Load.P99()) }, formatSeconds, noiseGoal, false},
		{fmt.Sprintf("LIST of %s pods, p50", thousands(o.ListPods)), func(r DropInRun) float64 { return seconds(r.List.Percentile(50)) }, formatSeconds, ratioGoal{}, false},
		{fmt.Sprintf("server CPU per LIST of %s pods", thousands(o.ListPods)), func(r DropInRun) float64 { return r.ListCPU.Seconds() / float64(o.Lists) }, formatSeconds, ratioGoal{}, true},
		{fmt.Sprintf("watch fan-out: %d watches × %s creates, all delivered", o.Watchers, thousands(o.WatchCreates)), func(r DropInRun) float64 { return seconds(r.WatchDelivered) }, formatSeconds, ratioGoal{}, false},
		{"server CPU in the watch fan-out", func(r DropInRun) float64 { return r.WatchCPU.Seconds() }, cpuSeconds, ratioGoal{}, true},
	}
	for i, m := range metrics {
		ours, stock := values(d.Ours, m.value), values(d.Stock, m.value)
		if m.cpu && slices.Contains(stock, 0) {
			// CPU time comes in 10 ms ticks: a run too small to take one has no ratio.
			fmt.Fprintf(b, "| %s | — (under a 10 ms tick) | %s | %s | %s | — |\n", m.name, m.format(summarize(ours)), m.format(summarize(stock)), m.goal)
			continue
		}
		ratios, err := pairedRatios(ours, stock)
		if err != nil {
			return fmt.Errorf("table 1, %s: %w", m.name, err)
		}
		ratio := summarize(ratios)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", m.name, formatRatio(ratio), m.format(summarize(ours)), m.format(summarize(stock)), m.goal, m.goal.met(ratio))
		if i == 2 {
			// The binary size is measured once: it has no range.
			if d.StockBinarySize == 0 {
				return fmt.Errorf("table 1: the stock binary has size 0")
			}
			size := float64(d.OursBinarySize) / float64(d.StockBinarySize)
			fmt.Fprintf(b, "| binary size | %.3f | %s | %s | %s | %s |\n", size, formatBytes(float64(d.OursBinarySize)), formatBytes(float64(d.StockBinarySize)), within5, within5.met(single(size)))
		}
	}
	b.WriteString("\n")
	if c := d.Build; c != nil {
		b.WriteString("What the profile costs the build: our binary built from an empty build cache (the module cache warm), static and " +
			"`-trimpath` like every build, once with the profile and once with `-pgo=off`.\n\n")
		b.WriteString("| build of ours | with the profile | without (-pgo=off) | with ÷ without |\n|---|---|---|---|\n")
		fmt.Fprintf(b, "| cold build time | %s | %s | %.3f |\n", c.ColdPGO.Round(time.Second), c.ColdNoPGO.Round(time.Second), c.ColdPGO.Seconds()/c.ColdNoPGO.Seconds())
		fmt.Fprintf(b, "| binary size | %s | %s | %.3f |\n\n", formatBytes(float64(c.SizePGO)), formatBytes(float64(c.SizeNoPGO)), float64(c.SizePGO)/float64(c.SizeNoPGO))
	}
	return nil
}

func writePolicy(b *bytes.Buffer, r *Results) error {
	p := r.Policy
	o := p.Options
	fmt.Fprintf(b, "%s\n\n", HeadingPolicy)
	fmt.Fprintf(b, "SecurityContextDeny's rule — no runAsUser, seLinuxOptions, supplementalGroups or fsGroup in the pod's security "+
		"context, no runAsUser or seLinuxOptions in any container's — enforced by the compiled-in plugin (our binary with "+
		"`--enable-admission-plugins=SecurityContextDeny`), by an equivalent ValidatingAdmissionPolicy and binding, and by an "+
		"equivalent validating webhook served over HTTPS on 127.0.0.1 (the CEL policy and the webhook are registered on our "+
		"binary with its default chain, one at a time, for their own runs only). Before it is measured, each is checked to "+
		"give the plugin's verdict on %d requests (each forbidden field set in turn, allowed ones, ephemeral containers "+
		"added through their subresource). The load's pods have an init container and two containers with restricted-style "+
		"security contexts: every way checks them fully and admits them. %d repetitions, interleaved; each run is %s untimed "+
		"warm-up creates, then %s timed creates from %s, whose pods are deleted after it so that every run starts "+
		"from the same state. Ratios and added latencies are against the baseline run of the same repetition.\n\n",
		len(equivalenceCases()), o.Repetitions, thousands(o.Load.WarmUp), thousands(o.Load.Creates), clients(o.Load.Clients))
	b.WriteString("| policy | throughput ÷ baseline | added p50 | added p99 | creates per second | p50 | p99 |\n|---|---|---|---|---|---|---|\n")
	if len(p.Configs) == 0 || p.Configs[0].Name != PolicyBaseline {
		return fmt.Errorf("table 2: the first configuration is not the baseline")
	}
	base := p.Configs[0].Runs
	for i, c := range p.Configs {
		throughput := values(c.Runs, LoadRun.Throughput)
		p50, p99 := values(c.Runs, p50Seconds), values(c.Runs, p99Seconds)
		ratio, addedP50, addedP99 := "1 (reference)", "—", "—"
		if i > 0 {
			ratios, err := pairedRatios(throughput, values(base, LoadRun.Throughput))
			if err != nil {
				return fmt.Errorf("table 2, %s: %w", c.Name, err)
			}
			d50, err := pairedDifferences(p50, values(base, p50Seconds))
			if err != nil {
				return fmt.Errorf("table 2, %s: %w", c.Name, err)
			}
			d99, err := pairedDifferences(p99, values(base, p99Seconds))
			if err != nil {
				return fmt.Errorf("table 2, %s: %w", c.Name, err)
			}
			ratio, addedP50, addedP99 = formatRatio(summarize(ratios)), formatSignedSeconds(summarize(d50)), formatSignedSeconds(summarize(d99))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Name, ratio, addedP50, addedP99,
			formatRate(summarize(throughput)), formatSeconds(summarize(p50)), formatSeconds(summarize(p99)))
	}
	b.WriteString("\n")
	return nil
}

func writeFanOut(b *bytes.Buffer, r *Results) error {
	f := r.FanOut
	o := f.Options
	hold := o.Hold.Seconds()
	holdText := formatSeconds(Summary{Median: hold, Min: hold, Max: hold, N: 1})
	fmt.Fprintf(b, "%s\n\n", HeadingFanOut)
	fmt.Fprintf(b, "N validating or N mutating webhooks (HTTPS on 127.0.0.1, one configuration, pod creates only), each holding "+
		"every request %s and then allowing it unchanged, on our binary with its default chain. The server calls validating "+
		"webhooks in parallel and mutating ones one after the other, so a create should take about one hold more than the "+
		"baseline with validating webhooks and N holds more with mutating ones. *Holds* is (p50 − baseline p50) ÷ %s; the "+
		"dispatch overhead per webhook is (p50 − baseline p50 − the expected holds) ÷ N. %d repetitions, interleaved; each run "+
		"is %s untimed warm-up creates, then %s timed creates from %s, whose pods are deleted after it. %s\n\n",
		holdText, holdText, o.Repetitions, thousands(o.Load.WarmUp), thousands(o.Load.Creates), clients(o.Load.Clients), fanOutConcurrencyNote(o.Load.Clients))
	b.WriteString("| webhooks | kind | holds | expected holds | dispatch overhead per webhook | p50 | p99 | creates per second |\n|---|---|---|---|---|---|---|---|\n")
	base := f.Baseline
	fmt.Fprintf(b, "| 0 | none (baseline) | — | — | — | %s | %s | %s |\n", formatSeconds(summarizeEach(base, p50Seconds)),
		formatSeconds(summarizeEach(base, p99Seconds)), formatRate(summarizeEach(base, LoadRun.Throughput)))
	if len(f.Validating) != len(f.Mutating) {
		return fmt.Errorf("table 3: %d validating configurations but %d mutating", len(f.Validating), len(f.Mutating))
	}
	for i := range f.Validating {
		for _, c := range []struct {
			kind     string
			runs     FanOutRuns
			expected float64
		}{
			{validatingKind, f.Validating[i], 1},
			{mutatingKind, f.Mutating[i], float64(f.Mutating[i].Webhooks)},
		} {
			n := float64(c.runs.Webhooks)
			added, err := pairedDifferences(values(c.runs.Runs, p50Seconds), values(base, p50Seconds))
			if err != nil {
				return fmt.Errorf("table 3, %d %s: %w", c.runs.Webhooks, c.kind, err)
			}
			holds := make([]float64, len(added))
			overhead := make([]float64, len(added))
			for j, a := range added {
				holds[j] = a / hold
				overhead[j] = (a - c.expected*hold) / n
			}
			fmt.Fprintf(b, "| %d | %s | %s | %.0f | %s | %s | %s | %s |\n", c.runs.Webhooks, c.kind, formatPlain(summarize(holds), 2), c.expected,
				formatSignedSeconds(summarize(overhead)), formatSeconds(summarizeEach(c.runs.Runs, p50Seconds)),
				formatSeconds(summarizeEach(c.runs.Runs, p99Seconds)), formatRate(summarizeEach(c.runs.Runs, LoadRun.Throughput)))
		}
	}
	b.WriteString("\n")
	return nil
}

func writeDispatch(b *bytes.Buffer, r *Results) error {
	d := r.Dispatch
	o := d.Options
	fmt.Fprintf(b, "%s\n\n", HeadingDispatch)
	fmt.Fprintf(b, "Our binary, with our webhook dispatch configured (breakers and budget at their defaults), and stock's, one etcd "+
		"under two prefixes, the same webhooks (HTTPS on 127.0.0.1) and the same load. Webhooks answer at once: validating ones allow; "+
		"*patching* mutating ones each add an annotation of their own, so that the object changes at every step; *no-patch* mutating ones "+
		"allow without a patch. The webhooks match pods with a label (their objectSelector), and each run alternates creates with the "+
		"label and without: those without are the run's baseline, on the same server at the same moments. The webhooks record, per "+
		"call, the time from their handler's start to its answer written; a create's time *at the API server* is its latency less what "+
		"the webhooks spent on it (the time at least one of them was handling it: their sum for mutating webhooks, which are called one "+
		"after another), and the overhead per webhook there is (p50 of that − the baseline's p50) ÷ N; it counts what the webhooks' "+
		"HTTPS servers do around their handlers (TLS, HTTP/2), the same for both servers. The *whole-request* "+
		"overhead per webhook, (p50 − baseline p50) ÷ N, also counts the webhooks' own handling, the same for both servers. Ratios are "+
		"ours ÷ stock, paired by repetition. %d repetitions, configurations and servers interleaved; each run is %s untimed warm-up "+
		"creates of each kind, then %s timed of each from one client, one with the label and one without in turn, whose pods are deleted after it. "+
		"Goals, at the API server: ours ÷ stock ≤ %.1f for mutating webhooks (patching or not), ≤ %.1f for validating ones. A third "+
		"server, our binary with no configuration (upstream's webhook plugins: the default), runs the same: its p50 ÷ stock's, paired "+
		"by repetition, is *equal within noise* when the repetitions' ratios straddle 1.\n\n",
		o.Repetitions, thousands(o.Load.WarmUp), thousands(o.Load.Creates), mutatingOverheadGoal, validatingOverheadGoal)
	b.WriteString("| webhooks | kind | at the API server, per webhook: ours ÷ stock | ours | stock | goal met | whole request, per webhook: ours ÷ stock | ours | stock | p50, ours with no settings ÷ stock | equal within noise |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	ours, oursDefault, stock := d.Overhead[oursServer], d.Overhead[oursDefaultServer], d.Overhead[stockServer]
	if len(ours) != len(stock) || len(oursDefault) != len(stock) || len(ours) == 0 {
		return fmt.Errorf("table 5: the servers' overhead runs do not pair")
	}
	perWebhook := func(c DispatchConfigRuns, p50 func(DispatchConfigRuns) []float64) ([]float64, error) {
		added, err := pairedDifferences(p50(c), values(c.Baseline, p50Seconds))
		for i := range added {
			added[i] /= float64(c.Webhooks)
		}
		return added, err
	}
	wholeP50 := func(c DispatchConfigRuns) []float64 { return values(c.Runs, p50Seconds) }
	serverP50 := func(c DispatchConfigRuns) []float64 {
		return values(c.ServerSide, func(l *Latencies) float64 { return l.Percentile(50).Seconds() })
	}
	stockAtServer := make([][]float64, len(ours))
	for i := range ours {
		row := fmt.Sprintf("%d %s", ours[i].Webhooks, ours[i].Kind)
		var cells []string
		for _, p50 := range []func(DispatchConfigRuns) []float64{serverP50, wholeP50} {
			oursPer, err := perWebhook(ours[i], p50)
			if err != nil {
				return fmt.Errorf("table 5, ours, %s: %w", row, err)
			}
			stockPer, err := perWebhook(stock[i], p50)
			if err != nil {
				return fmt.Errorf("table 5, stock, %s: %w", row, err)
			}
			ratios, err := pairedRatios(oursPer, stockPer)
			if err != nil {
				return fmt.Errorf("table 5, %s: %w", row, err)
			}
			ratio := summarize(ratios)
			cells = append(cells, formatRatio(ratio), formatSignedSeconds(summarize(oursPer)), formatSignedSeconds(summarize(stockPer)))
			if len(cells) == 3 {
				stockAtServer[i] = stockPer
				goal := validatingOverheadGoal
				if ours[i].Kind != validatingKind {
					goal = mutatingOverheadGoal
				}
				met := "yes"
				if ratio.Median > goal {
					met = "**no**"
				}
				cells = append(cells, met)
			}
		}
		defaultRatios, err := pairedRatios(values(oursDefault[i].Runs, p50Seconds), values(stock[i].Runs, p50Seconds))
		if err != nil {
			return fmt.Errorf("table 5, ours with no settings, %s: %w", row, err)
		}
		defaultRatio := summarize(defaultRatios)
		cells = append(cells, formatRatio(defaultRatio), withinNoise(defaultRatio))
		fmt.Fprintf(b, "| %d | %s | %s |\n", ours[i].Webhooks, dispatchKindLabel(ours[i].Kind), strings.Join(cells, " | "))
	}
	if err := writeCallAlone(b, d, stockAtServer); err != nil {
		return err
	}
	if err := writeDispatchProfiles(b, d); err != nil {
		return err
	}
	fmt.Fprintf(b, "\nA dead webhook: one mutating webhook, failurePolicy Ignore, timeoutSeconds %d, at an address that accepts TCP "+
		"connections and never answers, matching pods with a label. Creates one after another, with the label and without in turn: on "+
		"ours once its breaker is open (the failed calls that open it are not timed), %d runs of %s of each; on stock one run of %s of "+
		"each; medians of the runs (range). Goal: ours adds at most 1 ms at p99.\n\n",
		o.DeadTimeoutSeconds, o.Repetitions, thousands(o.DeadCreates), thousands(o.StockDeadCreates))
	b.WriteString("| server | p50 | p99 | p99 without the webhook | added p99 | goal met |\n|---|---|---|---|---|---|\n")
	for _, name := range []string{oursServer, stockServer} {
		runs := d.Dead[name]
		if len(runs) == 0 {
			return fmt.Errorf("table 5: no dead-webhook runs of %s", name)
		}
		added := summarizeEach(runs, AlternatingRun.AddedP99)
		met := "—"
		if name == oursServer {
			met = "yes"
			if added.Median > deadAddedP99Goal {
				met = "**no**"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name,
			formatSeconds(summarizeEach(runs, func(r AlternatingRun) float64 { return r.With.Percentile(50).Seconds() })),
			formatSeconds(summarizeEach(runs, func(r AlternatingRun) float64 { return r.With.Percentile(99).Seconds() })),
			formatSeconds(summarizeEach(runs, func(r AlternatingRun) float64 { return r.Without.Percentile(99).Seconds() })),
			formatSignedSeconds(added), met)
	}
	fmt.Fprintf(b, "\nA shadow the request never waits for: one mutating webhook in enforcement mode Audit with `maxWait: 0s` that holds every call %s, before one enforced "+
		"mutating webhook that answers at once; the shadow matches pods with a label (its objectSelector). Creates one after "+
		"another on ours, with and without the label in turn: %s through both, as many through the enforced one alone, so "+
		"both share the server's state and the machine's moments; %d runs, medians (range). Goal: the shadow adds at most 1 ms at p99, "+
		"the median of the runs, with no call late or dropped: its calls, summed over the runs once each has ended "+
		"(`portcullis_admission_webhook_shadow_calls_total`), say none was dropped to meet it: made and never waited for (async), late, dropped.\n\n",
		formatSeconds(single(o.SlowHold.Seconds())), thousands(o.DeadCreates), len(d.Shadow))
	b.WriteString("| server | p50 | p99 | p99 without the shadow | added p99 | calls: async / late / dropped | goal met |\n|---|---|---|---|---|---|---|\n")
	if len(d.Shadow) == 0 {
		return fmt.Errorf("table 5: no shadow runs")
	}
	shadowAdded := summarizeEach(d.Shadow, AlternatingRun.AddedP99)
	shadowMet := "yes"
	shadowCalls := sumCalls(d.Shadow)
	if shadowAdded.Median > shadowAddedP99Goal || shadowCalls["late"]+shadowCalls["dropped"] > 0 {
		shadowMet = "**no**"
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s / %s / %s | %s |\n", oursServer,
		formatSeconds(summarizeEach(d.Shadow, func(r AlternatingRun) float64 { return r.With.Percentile(50).Seconds() })),
		formatSeconds(summarizeEach(d.Shadow, func(r AlternatingRun) float64 { return r.With.Percentile(99).Seconds() })),
		formatSeconds(summarizeEach(d.Shadow, func(r AlternatingRun) float64 { return r.Without.Percentile(99).Seconds() })),
		formatSignedSeconds(shadowAdded), thousands(shadowCalls["async"]), thousands(shadowCalls["late"]), thousands(shadowCalls["dropped"]), shadowMet)

	fmt.Fprintf(b, "\nA webhook in Warn, waited for (the default): one validating webhook in enforcement mode Warn that denies each "+
		"create after %s; the request waits for its verdict to warn. Creates one after another on ours, with and without the "+
		"label it matches in turn, %s of each; %d runs, medians (range). Goal: it adds its own latency and no more — the added "+
		"p50 between %s and %s; every call in time (recorded on its request).\n\n",
		formatSeconds(single(warnHold.Seconds())), thousands(o.DeadCreates), len(d.Warn),
		formatSeconds(single(warnHold.Seconds())), formatSeconds(single(warnHold.Seconds()+warnAddedSlack)))
	b.WriteString("| server | p50 | p99 | p50 without it | added p50 | added p99 | calls: in time / late / dropped | goal met |\n|---|---|---|---|---|---|---|---|\n")
	if len(d.Warn) == 0 {
		return fmt.Errorf("table 5: no Warn runs")
	}
	warnAdded := summarizeEach(d.Warn, AlternatingRun.AddedP50)
	warnCalls := sumCalls(d.Warn)
	warnMet := "yes"
	if warnAdded.Median < warnHold.Seconds() || warnAdded.Median > warnHold.Seconds()+warnAddedSlack || warnCalls["late"]+warnCalls["dropped"] > 0 {
		warnMet = "**no**"
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s |\n", oursServer,
		formatSeconds(summarizeEach(d.Warn, func(r AlternatingRun) float64 { return r.With.Percentile(50).Seconds() })),
		formatSeconds(summarizeEach(d.Warn, func(r AlternatingRun) float64 { return r.With.Percentile(99).Seconds() })),
		formatSeconds(summarizeEach(d.Warn, func(r AlternatingRun) float64 { return r.Without.Percentile(50).Seconds() })),
		formatSignedSeconds(warnAdded), formatSignedSeconds(summarizeEach(d.Warn, AlternatingRun.AddedP99)),
		thousands(warnCalls["in_time"]), thousands(warnCalls["late"]), thousands(warnCalls["dropped"]), warnMet)
	hold := o.SlowHold.Seconds()
	fmt.Fprintf(b, "\nA fast denial among slow webhooks: %d validating webhooks that hold every call %s and one that denies at once; "+
		"%s creates one after another on each server, all refused.\n\n", slowWebhooks, formatSeconds(single(hold)), thousands(o.SlowCreates))
	b.WriteString("| server | p50 | max |\n|---|---|---|\n")
	for _, name := range []string{oursServer, stockServer} {
		l := d.FastDeny[name]
		if l == nil {
			return fmt.Errorf("table 5: no fast-deny runs of %s", name)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", name, formatSeconds(single(l.Percentile(50).Seconds())), formatSeconds(single(l.Percentile(100).Seconds())))
	}
	b.WriteString("\n")
	return nil
}

// dispatchKindLabel names a kind of table 5's webhooks.
func dispatchKindLabel(kind string) string {
	switch kind {
	case mutatingKind:
		return "mutating, patching"
	case unpatchedMutatingKind:
		return "mutating, no patch"
	}
	return kind
}

// writeCallAlone renders the calls made alone beside stock's overhead per webhook at the API
// server (stockAtServer, by configuration and repetition, in seconds).
func writeCallAlone(b *bytes.Buffer, d *DispatchResult, stockAtServer [][]float64) error {
	o := d.Options
	if len(d.CallAlone) != len(stockAtServer) {
		return fmt.Errorf("table 5: %d configurations' calls alone for %d configurations", len(d.CallAlone), len(stockAtServer))
	}
	fmt.Fprintf(b, "\nThe call alone: after each configuration's runs, the harness's own process makes the call to the configuration's "+
		"first webhook as upstream's dispatchers make it (a client from `webhookutil.ClientManager`: client-go's REST client, JSON, "+
		"HTTP/2 over TLS), posting the last review that webhook received, %s times one after another, with no API server around it. Its "+
		"time less the webhook's handling (p50, median of the repetitions, range) is what one call costs its caller at least. Mutating "+
		"webhooks are called one after another, so a dispatch that makes this call once per webhook spends at least this per mutating "+
		"webhook at the API server: the call alone ÷ stock's overhead there (paired by repetition) is the least that ours ÷ stock can "+
		"be. Validating webhooks are called in parallel; with more than one, the bound does not apply (—).\n\n", thousands(o.Load.Creates))
	b.WriteString("| webhooks | kind | the call alone, p50 | ÷ stock's overhead per webhook at the API server | goal |\n|---|---|---|---|---|\n")
	ours := d.Overhead[oursServer]
	for i, runs := range d.CallAlone {
		c := ours[i]
		alone := values(runs, func(l *Latencies) float64 { return l.Percentile(50).Seconds() })
		bound, goal := "—", "—"
		if c.Kind != validatingKind || c.Webhooks == 1 {
			ratios, err := pairedRatios(alone, stockAtServer[i])
			if err != nil {
				return fmt.Errorf("table 5, the call alone, %d %s: %w", c.Webhooks, c.Kind, err)
			}
			bound = formatRatio(summarize(ratios))
			goal = fmt.Sprintf("≤ %.1f", validatingOverheadGoal)
			if c.Kind != validatingKind {
				goal = fmt.Sprintf("≤ %.1f", mutatingOverheadGoal)
			}
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s |\n", c.Webhooks, dispatchKindLabel(c.Kind), formatSeconds(summarize(alone)), bound, goal)
	}
	return nil
}

// writeDispatchProfiles renders where ours' and stock's CPU went under the mutating dispatch.
func writeDispatchProfiles(b *bytes.Buffer, d *DispatchResult) error {
	if len(d.Profiles) == 0 {
		return fmt.Errorf("table 5: no profiles")
	}
	p0 := d.Profiles[0]
	fmt.Fprintf(b, "\nWhere the time goes: each server's CPU profile (`/debug/pprof/profile`, %s) while one client creates pods one after "+
		"another through %d patching mutating webhooks: the CPU under the mutating dispatcher's `Dispatch` (upstream's "+
		"`mutatingDispatcher`, ours `dispatcher`), and the heaviest functions it calls, by cumulative CPU time (flat: in the function itself), per webhook call. Work the HTTP/2 transport does on its own "+
		"goroutines (reading responses) is not under `Dispatch` and not counted.\n\n", formatSeconds(single(p0.Window.Seconds())), p0.Webhooks)
	b.WriteString("| server | creates profiled | CPU under `Dispatch` per webhook call |\n|---|---|---|\n")
	for _, p := range d.Profiles {
		fmt.Fprintf(b, "| %s | %s | %s |\n", p.Server, thousands(p.Creates), formatSeconds(single(p.PerCall().Seconds())))
	}
	for _, p := range d.Profiles {
		fmt.Fprintf(b, "\n%s, per webhook call:\n\n| function | cumulative | flat |\n|---|---|---|\n", p.Server)
		calls := time.Duration(p.Creates * p.Webhooks)
		if calls == 0 {
			return fmt.Errorf("table 5: the profile of %s saw no create", p.Server)
		}
		for _, e := range p.Top {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", e.Function, formatSeconds(single((e.Cum / calls).Seconds())), formatSeconds(single((e.Flat / calls).Seconds())))
		}
	}
	return nil
}

// withinNoise says whether paired ratios straddle 1: the difference is within the runs' own
// spread.
func withinNoise(r Summary) string {
	if r.Min <= 1 && r.Max >= 1 {
		return "yes"
	}
	return "**no**"
}

// single is one measured value as a Summary.
func single(v float64) Summary { return Summary{Median: v, Min: v, Max: v, N: 1} }

func writePlugins(b *bytes.Buffer, r *Results) error {
	p := r.Plugins
	fmt.Fprintf(b, "%s\n\n", HeadingPlugins)
	fmt.Fprintf(b, "`%s`, over every package that registers a plugin of ours, and the admission trace's (a decorator around "+
		"every plugin: its rows are the cost per plugin of a request, ignored when the request does not ask for a trace). "+
		"A case is *ignored* when the plugin lets the "+
		"request through without looking at it (another resource, a subresource or operation it does not check, an opted-out "+
		"pod) and *checked* when it examines the pod fully; other cases (such as scaling with the number of objects) have no "+
		"goal. Goals: ignored ≤ 1 µs and 0 allocations; checked ≤ 5 µs, except where a case has its own.\n\n", strings.Join(p.Command, " "))
	b.WriteString("| plugin | case | benchmark | ns/op | B/op | allocs/op | goal | met |\n|---|---|---|---|---|---|---|---|\n")
	caseOrder := []string{CaseIgnored, CaseChecked, CaseOther}
	for _, plugin := range p.Plugins {
		for _, kind := range caseOrder {
			cases := p.CasesOf(plugin, kind)
			if len(cases) == 0 {
				if kind != CaseOther {
					fmt.Fprintf(b, "| %s | %s | (no benchmark) | — | — | — | %s | missing |\n", plugin, kind, goalOf(kind))
				}
				continue
			}
			slices.SortFunc(cases, func(x, y PluginBenchmark) int { return strings.Compare(x.Name, y.Name) })
			for _, c := range cases {
				ns, bytesPerOp, allocs := summarize(c.NsPerOp), summarize(c.BytesPerOp), summarize(c.AllocsPerOp)
				goal, met := goalOf(kind), goalMet(kind, ns.Median, allocs.Median)
				if g, ok := caseGoals[path.Base(c.Package)+"."+c.Name]; ok {
					goal, met = g.judge(p, c.Package, ns.Median)
				}
				fmt.Fprintf(b, "| %s | %s | `%s.%s` | %s | %s | %s | %s | %s |\n", plugin, kind, path.Base(c.Package), c.Name,
					formatSignificant(ns), formatPlain(bytesPerOp, 0), formatPlain(allocs, 0), goal, met)
			}
		}
	}
	b.WriteString("\n")
	return nil
}

func writeNotes(b *bytes.Buffer, r *Results) error {
	b.WriteString("## Notes\n\n")
	if !r.LoadBefore.Unknown && !r.LoadAfter.Unknown {
		fmt.Fprintf(b, "- Load average (1, 5, 15 min) before the run: %.2f, %.2f, %.2f; after it: %.2f, %.2f, %.2f, mostly the run's own. "+
			"Load averages lag by minutes; the CPU time of other processes, table by table, is the better guide:\n",
			r.LoadBefore.One, r.LoadBefore.Five, r.LoadBefore.Fifteen, r.LoadAfter.One, r.LoadAfter.Five, r.LoadAfter.Fifteen)
	} else {
		b.WriteString("- The CPU time of other processes, table by table:\n")
	}
	for _, d := range r.Disturbances {
		if !d.Known {
			fmt.Fprintf(b, "  - %s: the CPU time of other processes could not be measured.\n", d.Table)
			continue
		}
		verdict := "too little to matter"
		if d.ForeignShare > disturbedShare {
			verdict = "**enough to disturb its figures: compare them with care, or run `make bench` again on a quiet machine**"
		}
		fmt.Fprintf(b, "  - %s: processes other than the harness's (kernel threads included) used %.1f%% of the CPUs' time while it ran — %s.\n",
			d.Table, d.ForeignShare*100, verdict)
	}
	b.WriteString("- Start → /readyz is timed from starting the process to the first `200` of `/readyz`, polled every 50 ms; " +
		"RSS is `VmRSS` from `/proc/<pid>/status`, read right after `/readyz` first answers and right after the last timed create.\n")
	b.WriteString("- Every server, etcd, webhook server and client runs on this one machine: a server's throughput is what it " +
		"gets while sharing the CPUs with etcd and its own load generator, not what it would do alone.\n")
	b.WriteString("- Table 2 runs SecurityContextDeny on a second server (the plugin is switched on by flag, so it cannot be " +
		"switched on for some runs only); both servers share one etcd under different prefixes.\n")
	b.WriteString("- Table 4: DenyEscalatingExec's and DenyExecOnPrivileged's checked case is the decision alone; in the server " +
		"they also read the target pod with a GET over loopback. PodPreset's `checked-apply` cases include a deep copy of the pod " +
		"per operation, since applying presets changes it; `pod-deep-copy-alone` measures that copy alone.\n")
	b.WriteString("- `make bench` measures all of this again and rewrites this file.\n")
	return nil
}

// clients says "1 client" or "n clients".
func clients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

// fanOutConcurrencyNote explains why table 3's load is light, or warns that it is not.
func fanOutConcurrencyNote(clients int) string {
	if clients == 1 {
		return "One client, so that no create waits behind another: under a saturating load a create's latency is " +
			"mostly queueing, which the holds relieve, and the difference from the baseline would not be the webhooks' alone."
	}
	return "With concurrent clients a create also waits behind others, so the difference from the baseline is not " +
		"the webhooks' alone: read the overheads with care."
}

func values[T any](runs []T, f func(T) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

func p50Seconds(r LoadRun) float64 { return r.P50().Seconds() }
func p99Seconds(r LoadRun) float64 { return r.P99().Seconds() }

// pairedDifferences returns a[i]-b[i] for runs measured side by side.
func pairedDifferences(a, b []float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("cannot pair %d runs with %d", len(a), len(b))
	}
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out, nil
}

func withinTolerance(ratio float64) string {
	if math.Abs(ratio-1) <= dropInTolerance {
		return "yes"
	}
	return "**no**"
}

// ratioGoal is a goal for an ours ÷ stock ratio: at least at, at most at (most), within
// the drop-in tolerance of 1 (within), within noise (its runs' range straddles 1: no
// difference the runs can tell), or none (the zero value).
type ratioGoal struct {
	at                  float64
	most, within, noise bool
}

var (
	within5   = ratioGoal{within: true}
	noiseGoal = ratioGoal{noise: true}
)

func (g ratioGoal) String() string {
	switch {
	case g.within:
		return fmt.Sprintf("within %.0f%%", dropInTolerance*100)
	case g.noise:
		return "within noise (range straddles 1)"
	case g.at == 0:
		return "—"
	case g.most:
		return fmt.Sprintf("≤ %.2f", g.at)
	default:
		return fmt.Sprintf("≥ %.2f", g.at)
	}
}

func (g ratioGoal) met(r Summary) string {
	ratio := r.Median
	switch {
	case g.within:
		return withinTolerance(ratio)
	case g.noise:
		if r.Min <= 1 && r.Max >= 1 {
			return "yes"
		}
		return "**no**"
	case g.at == 0:
		return "—"
	case g.most && ratio <= g.at, !g.most && ratio >= g.at:
		return "yes"
	default:
		return "**no**"
	}
}

// caseGoal is a goal set for one benchmark, in place of its kind's.
type caseGoal struct {
	ns float64
	// beyond names a benchmark of the same package whose median is subtracted first, so the
	// goal counts only the work beyond it.
	beyond string
}

// caseGoals are the goals set for particular benchmarks, by "<package>.<benchmark>".
var caseGoals = map[string]caseGoal{
	// PodPreset: applying one preset, beyond the benchmark's own copy of the pod; a namespace
	// of 1,000 presets; one preset at the size caps (1,024 env vars).
	"podpreset.BenchmarkAdmit/checked-apply/presets=1":          {ns: 3000, beyond: "BenchmarkAdmit/pod-deep-copy-alone"},
	"podpreset.BenchmarkAdmit/checked-apply/presets=1000":       {ns: 15000},
	"podpreset.BenchmarkAdmit/checked-apply/presets=1,env=1024": {ns: 200000},
	// PodSecurityPolicy: a typical pod, the policy it may use the last of 10, and of 100
	// (every policy is tried on a copy of the pod: the cost grows with their number).
	"podsecuritypolicy.BenchmarkAdmit/checked-admit/policies=10":  {ns: 20000},
	"podsecuritypolicy.BenchmarkAdmit/checked-admit/policies=100": {ns: 200000},
	// InitialResources: a pod whose image's estimate is cached, beyond the pod's copy; a
	// miss on a stuck source, bounded by its 1 ms miss wait.
	"initialresources.BenchmarkAdmit/checked-cached":      {ns: 5000, beyond: "BenchmarkAdmit/pod-deep-copy-alone"},
	"initialresources.BenchmarkAdmit/other-miss-wait=1ms": {ns: 1500000},
	// PersistentVolumeLabel: a volume located through 1,000 Nodes in the informer.
	"persistentvolumelabel.BenchmarkAdmit/checked-labelled-nodes=1000": {ns: 20000},
	// The admission trace, per plugin and request: off (a request that does not ask for it),
	// beyond the plugin undecorated; a traced request through a plugin that changes the pod,
	// beyond making the request.
	"trace.BenchmarkTrace/ignored-not-dry-run":        {ns: 50, beyond: "BenchmarkTrace/undecorated"},
	"trace.BenchmarkTrace/ignored-dry-run-not-asking": {ns: 50, beyond: "BenchmarkTrace/undecorated"},
	"trace.BenchmarkTrace/checked-traced":             {ns: 50000, beyond: "BenchmarkTrace/request-alone"},
	// WebhookConfigurationGuard: a write of a webhook configuration among 200, which checks
	// the whole chain; such writes are rare (the benchmark's own goal).
	"webhookconfigurationguard.BenchmarkValidate/checked-write-200-configurations": {ns: 10000000},
}

// judge returns the goal's text and whether median meets it.
func (g caseGoal) judge(p *PluginsResult, pkg string, median float64) (goal, met string) {
	goal = "≤ " + formatNanoseconds(g.ns)
	if g.beyond != "" {
		goal += " beyond `" + path.Base(g.beyond) + "`"
		i := slices.IndexFunc(p.Benchmarks, func(b PluginBenchmark) bool { return b.Package == pkg && b.Name == g.beyond })
		if i < 0 {
			return goal, "missing"
		}
		median -= summarize(p.Benchmarks[i].NsPerOp).Median
	}
	if median <= g.ns {
		return goal, "yes"
	}
	return goal, "**no**"
}

// formatNanoseconds says a duration given in nanoseconds in µs.
func formatNanoseconds(ns float64) string {
	return strconv.FormatFloat(ns/1000, 'f', -1, 64) + " µs"
}

func goalOf(kind string) string {
	switch kind {
	case CaseIgnored:
		return "≤ 1 µs, 0 allocs"
	case CaseChecked:
		return "≤ 5 µs"
	}
	return "—"
}

func goalMet(kind string, ns, allocs float64) string {
	met := true
	switch kind {
	case CaseIgnored:
		met = ns <= ignoredGoalNs && allocs == 0
	case CaseChecked:
		met = ns <= checkedGoalNs
	default:
		return "—"
	}
	if met {
		return "yes"
	}
	return "**no**"
}

// withRange formats a summary's median, adding its range when the runs differ.
func withRange(s Summary, format func(float64) string) string {
	if s.N <= 1 || s.Min == s.Max {
		return format(s.Median)
	}
	sep := "–"
	if s.Min < 0 || s.Max < 0 {
		sep = " to " // a dash next to a minus sign reads as a subtraction
	}
	return fmt.Sprintf("%s (%s%s%s)", format(s.Median), format(s.Min), sep, format(s.Max))
}

func formatRatio(s Summary) string {
	return withRange(s, func(v float64) string { return fmt.Sprintf("%.3f", v) })
}

func formatPlain(s Summary, decimals int) string {
	return withRange(s, func(v float64) string { return fmt.Sprintf("%.*f", decimals, v) })
}

// formatSignificant keeps about three significant digits, and every digit of a whole number.
func formatSignificant(s Summary) string {
	return withRange(s, func(v float64) string { return fmt.Sprintf("%.*f", decimalsFor(v), v) })
}

func formatRate(s Summary) string {
	return withRange(s, func(v float64) string { return fmt.Sprintf("%.0f", v) })
}

// formatSeconds formats durations given in seconds, all in the unit the largest calls for.
func formatSeconds(s Summary) string {
	unit, scale := durationUnit(largest(s))
	return withRange(s, func(v float64) string { return fmt.Sprintf("%.*f", decimalsFor(v*scale), v*scale) }) + " " + unit
}

// formatSignedSeconds is formatSeconds with an explicit sign, for differences.
func formatSignedSeconds(s Summary) string {
	unit, scale := durationUnit(largest(s))
	return withRange(s, func(v float64) string { return fmt.Sprintf("%+.*f", decimalsFor(v*scale), v*scale) }) + " " + unit
}

// largest is the summary's value farthest from zero.
func largest(s Summary) float64 {
	return max(math.Abs(s.Median), math.Abs(s.Min), math.Abs(s.Max))
}

func durationUnit(seconds float64) (string, float64) {
	switch a := math.Abs(seconds); {
	case a >= 1:
		return "s", 1
	case a >= 1e-3:
		return "ms", 1e3
	default:
		return "µs", 1e6
	}
}

// decimalsFor keeps about three significant digits.
func decimalsFor(v float64) int {
	switch a := math.Abs(v); {
	case a >= 100:
		return 0
	case a >= 10:
		return 1
	default:
		return 2
	}
}

func formatBytesSummary(s Summary) string {
	return withRange(s, func(v float64) string { return fmt.Sprintf("%.0f", v/(1<<20)) }) + " MiB"
}

func formatBytes(v float64) string {
	if v >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", v/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", v/(1<<20))
}

// thousands writes n with comma separators, as the issue does: 2,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sumCalls sums the runs' softened calls by result, as whole calls.
func sumCalls(runs []AlternatingRun) map[string]int {
	sum := map[string]int{}
	for _, r := range runs {
		for result, v := range r.Calls {
			sum[result] += int(v + 0.5)
		}
	}
	return sum
}
