package soak

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeRun is a run of n creates, every 5th refused by design, plus failures.
func fakeRun(binary string, fault FaultKind, n int, failures int) *RunResult {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &LoadResult{Clients: 2, Started: base, Latencies: &Histogram{}}
	for i := 1; i <= n; i++ {
		o := Outcome{Name: podName(i), Marked: i%5 == 0, Sent: base.Add(time.Duration(i) * time.Millisecond)}
		o.Done = o.Sent.Add(3 * time.Millisecond)
		switch {
		case o.Marked:
			o.Code, o.Reason, o.Message = 403, "Forbidden", refusalMessage
		case i <= failures:
			o.Code, o.Reason, o.Message = 500, "InternalError", "failed calling webhook"
		default:
			o.UID = "uid"
			l.Latencies.Record(3 * time.Millisecond)
		}
		l.Outcomes = append(l.Outcomes, o)
		l.Finished = o.Done
	}
	run := &RunResult{Binary: binary, Fault: fault, Load: l}
	run.Verification = Verification{InEtcd: l.Acked(), Listed: l.Acked()}
	if fault != "" {
		run.Window = FaultWindow{Kind: fault, Injected: true, Start: base, End: base.Add(2 * time.Millisecond), Detail: "something failed"}
	}
	run.Recovery = computeRecovery(l.Outcomes, run.Window.End)
	return run
}

func fakeResults() *Results {
	o := DefaultOptions()
	o.Load.Pods = 20
	o.Faults = []FaultKind{FaultWebhookKill}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &Results{
		Options: o, Machine: Machine{CPU: "test CPU", CPUs: 2, MemoryBytes: 4 << 30, Kernel: "6.0", GoVersion: "go1.26"},
		Started: start, Finished: start.Add(90 * time.Second),
		Binaries: map[string]BinaryInfo{Ours: {Version: "Kubernetes v1.37.1+portcullis.1", Module: "v1.37.1"}, Stock: {Version: "Kubernetes v1.37.1", Module: "v1.37.1"}},
		Loads:    []*RunResult{fakeRun(Ours, "", 20, 0), fakeRun(Stock, "", 20, 0)},
		Faults:   []*RunResult{fakeRun(Ours, FaultWebhookKill, 20, 3), fakeRun(Stock, FaultWebhookKill, 20, 2)},
		Fuzz:     &FuzzReport{Targets: []FuzzTarget{{Package: "pkg/x", Target: "FuzzX", Executions: 123456, Time: "30s", Wall: "35s", Result: "ok"}}},
		BadInputs: map[string]*BadInputRun{
			Ours: {Results: []BadInputResult{
				{Case: BadInput{Name: "pods: invalid JSON", Plugin: NoPlugin}, Status: 400, Reason: "BadRequest", Message: "bad"},
				{Case: BadInput{Name: "pods: resourceVersion not a number", Plugin: NoPlugin}, Status: 500, Reason: "InternalError", Message: "strconv"},
				{Case: BadInput{Name: "podsecuritypolicies: resourceVersion not a number", Plugin: "PodSecurityPolicy", Twin: "pods: resourceVersion not a number"}, Status: 500, Reason: "InternalError", Message: "strconv"},
			}},
			Stock: {Results: []BadInputResult{
				{Case: BadInput{Name: "pods: invalid JSON", Plugin: NoPlugin}, Status: 500, Message: "oops"},
				{Case: BadInput{Name: "pods: resourceVersion not a number", Plugin: NoPlugin}, Status: 500, Reason: "InternalError", Message: "strconv"},
			}},
		},
	}
}

func TestWriteReport(t *testing.T) {
	r := fakeResults()
	var b bytes.Buffer
	if err := WriteReport(&b, r); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{
		"# Reliability", "## 1. Load", "## 2. Faults under load", "## 3. HA", "## 4. Fuzzing", "## 5. Bad inputs", "## Verdict",
		"| ours | 20 | 16 | 4 | 0 | 0 | 0 |",
		"| webhook-kill | ours | 2.00 ms | 20 | 13 | 4 | 3× 500 InternalError: failed calling webhook | 0 | 0 |",
		"| `pkg/x` | `FuzzX` | 123,456 | 30s | ok |",
		"| pods: invalid JSON | — | 400 BadRequest | 500 | clear 4xx |",
		"| ours | 3 | 1 | 2 | 0 | 0 (none) |",
		"| podsecuritypolicies: resourceVersion not a number | PodSecurityPolicy | 500 InternalError | 500 InternalError (pods: resourceVersion not a number) | upstream's answer, stock's too |",
		"Every run kept every acknowledged pod",
		"test CPU with 2 logical CPUs and 4.0 GiB",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q:\n%s", want, doc)
		}
	}
	for i, line := range strings.Split(doc, "\n") {
		if strings.Contains(line, "NaN") || strings.Contains(line, "Inf") || strings.Contains(line, "%!") {
			t.Errorf("line %d is malformed: %s", i+1, line)
		}
	}

	// A loss, a panic and a fault not recovered from are listed in the verdict.
	r.Faults[0].Verification.Lost, r.Faults[0].Verification.LostNames = 1, []string{"soak-00001"}
	r.Loads[1].Panics = PanicLines{Count: 1, First: []string{"panic: boom"}}
	r.Faults[1].Recovery.Recovered = false
	r.Fuzz.Targets[0].Result = "FAIL"
	// A 5xx stock does not give, and a request only ours panicked on, are ours to fix.
	r.BadInputs[Stock].Results[1].Status = 400
	r.BadInputs[Ours].Panics = PanicLines{Count: 1, First: []string{"Observed a panic"}, Requests: map[string]int{"POST /api/v1/pods": 1}}
	failures := r.Failures()
	if len(failures) != 7 {
		t.Fatalf("got failures %q, want 7", failures)
	}
	b.Reset()
	if err := WriteReport(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Problems found", "1 acknowledged pods lost (soak-00001)", "panic: boom", "**not recovered**", "| **FAIL** |", "fuzzing: pkg/x FuzzX: FAIL"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestWriteReportNothingRun(t *testing.T) {
	r := &Results{Options: DefaultOptions(), Binaries: map[string]BinaryInfo{}}
	var b bytes.Buffer
	if err := WriteReport(&b, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "Not run"); got != 6 {
		t.Errorf("%d sections say \"Not run\", want 6:\n%s", got, b.String())
	}
}

func TestParseFuzzReport(t *testing.T) {
	r, err := parseFuzzReport("f.tsv", "package\ttarget\texecs\ttime_fuzzed\twall\tresult\n./pkg/a\tFuzzA\t100\t10s\t14s\tok\n\n./pkg/b\tFuzzB\t2000000\t1m0s\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Targets) != 2 || r.Targets[1].Executions != 2000000 || r.Targets[0].Time != "10s" || r.Targets[0].Result != "ok" || r.Targets[1].Result != "" {
		t.Errorf("got %+v", r.Targets)
	}
	for _, bad := range []string{"h\nonly\ttwo\n", "h\na\tb\tmany\t1s\n"} {
		if _, err := parseFuzzReport("f.tsv", bad); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
	if r, err := parseFuzzReport("f.tsv", "header only\n"); err != nil || len(r.Targets) != 0 {
		t.Errorf("a header alone: %v, %+v", err, r)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := thousands64(n); got != want {
			t.Errorf("thousands64(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriteReportHA(t *testing.T) {
	r := fakeResults()
	pair := fakeRun(Ours, FaultAPIServerKill, 20, 2)
	cluster := fakeRun(Ours, FaultRollingRestart, 20, 0)
	both := []string{"192.0.2.1", "192.0.2.2"}
	r.HA = &HAResult{
		Pairs: []*RunResult{pair},
		Cluster: &HAClusterResult{Run: cluster, EtcdMembers: 3, MasterLeasesBefore: both, MasterLeasesAfter: both,
			EndpointsBefore: both, EndpointsAfter: both, IdentityLeases: []string{"apiserver-x"}, CRDGeneration: 1,
			PolicyAPIServed: []bool{true, true}, SameChain: []bool{true, true}},
	}
	var b bytes.Buffer
	if err := WriteReport(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### A pair killed behind a balancer", "| apiserver-kill, ours | 20 |",
		"### Two of ours on a 3-member etcd over TLS", "| rolling-restart, ours | 20 |",
		"192.0.2.1, 192.0.2.2 / 192.0.2.1, 192.0.2.2 | yes |", "| 1; not written | yes |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	if f := r.Failures(); len(f) != 0 {
		t.Errorf("failures %q, want none", f)
	}
	// Servers fighting over the CRD, a lost endpoint and a load that ended first all fail.
	r.HA.Cluster.CRDGeneration, r.HA.Cluster.CRDWrittenDuring = 3, true
	r.HA.Cluster.EndpointsAfter = both[:1]
	r.HA.Pairs[0].Recovery = Recovery{LoadEndedFirst: true}
	if f := r.Failures(); len(f) != 3 {
		t.Errorf("failures %q, want 3", f)
	}
}
