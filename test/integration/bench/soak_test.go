package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/soak"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// TestSoakSmoke runs `make soak`'s harness at a small size: the load, then each fault once
// (an HA pair's server killed among them), on ours and on stock. It asserts what must hold however slow the machine: nothing
// acknowledged is lost, nothing refused is stored, every fault was injected under load and
// recovered from, no panic was logged, and the report renders. It asserts no timing.
func TestSoakSmoke(t *testing.T) {
	t.Parallel() // beside TestHarness, which starts servers of its own
	bins := framework.FindBinaries(t)
	opts := soak.SmokeOptions()
	opts.BinDir = bins.Dir
	opts.WorkDir = t.TempDir()
	opts.Progress = testLog{t}
	opts.IRFlood.Images = 0 // TestSoakInitialResourcesFlood runs it, beside this test
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	results, err := soak.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}

	if got, want := len(results.Loads), len(opts.Binaries); got != want {
		t.Errorf("%d load runs, want %d", got, want)
	}
	if got, want := len(results.Faults), len(opts.Binaries)*len(soak.AllFaults); got != want {
		t.Errorf("%d fault runs, want %d (each fault on each binary)", got, want)
	}
	if results.HA == nil || len(results.HA.Pairs) != len(opts.Binaries) {
		t.Fatalf("HA: %+v, want a pair killed per binary", results.HA)
	}
	runs := append(append(append([]*soak.RunResult{}, results.Loads...), results.Faults...), results.HA.Pairs...)
	for _, run := range runs {
		t.Run(run.Name(), func(t *testing.T) {
			v := run.Verification
			if v.Lost != 0 {
				t.Errorf("%d acknowledged pods lost: %v", v.Lost, v.LostNames)
			}
			if v.RefusedStored != 0 {
				t.Errorf("%d refused pods are stored", v.RefusedStored)
			}
			if run.Panics.Count != 0 {
				t.Errorf("%d panic lines in the logs: %q", run.Panics.Count, run.Panics.First)
			}
			if !v.OK() {
				t.Errorf("the reads back found problems: %+v", v)
			}
			l := run.Load
			if l.Unsent() != 0 || l.Acked() == 0 {
				t.Errorf("%d of %d creates unsent, %d acknowledged", l.Unsent(), len(l.Outcomes), l.Acked())
			}
			refused := 0
			for _, o := range l.Outcomes {
				if o.Marked && o.Acked() {
					t.Errorf("the marked pod %s was admitted", o.Name)
				}
				if o.RefusedByDesign() {
					refused++
				}
			}
			if refused == 0 {
				t.Error("no create was refused by design: the refusal check checked nothing")
			}
			if v.InEtcd < l.Acked() || v.Listed < l.Acked() {
				t.Errorf("%d pods in etcd and %d listed, fewer than the %d acknowledged", v.InEtcd, v.Listed, l.Acked())
			}
			if l.Latencies.Count() != l.Acked() || l.Latencies.Percentile(99) < l.Latencies.Percentile(50) {
				t.Errorf("histogram of %d latencies for %d acknowledged creates; p50 %s, p99 %s", l.Latencies.Count(), l.Acked(),
					l.Latencies.Percentile(50), l.Latencies.Percentile(99))
			}
			if run.Fault != "" && !run.Window.Injected {
				t.Error("the fault was not injected: the load ended first")
			}
			if !run.Recovery.Recovered {
				t.Errorf("not recovered: %+v", run.Recovery)
			}
		})
	}
	// The webhook fault must have been felt: creates fail while the Fail webhooks are down.
	for _, run := range results.Faults {
		if run.Fault == soak.FaultWebhookKill && !run.Recovery.Disrupted {
			t.Errorf("%s: no create failed while the webhook server was down", run.Name())
		}
	}
	if failures := results.Failures(); len(failures) != 0 {
		t.Errorf("the soak reports problems:\n%s", strings.Join(failures, "\n"))
	}

	var doc bytes.Buffer
	if err := soak.WriteReport(&doc, results); err != nil {
		t.Fatal(err)
	}
	for _, heading := range []string{"## 1. Load", "## 2. Faults under load", "## 3. HA", "## 4. Fuzzing", "## 5. Bad inputs", "## 6. InitialResources under a flood of distinct images", "## Verdict"} {
		header, rows, err := tableAfter(doc.String(), heading)
		if heading == "## 1. Load" || heading == "## 2. Faults under load" {
			if err != nil {
				t.Errorf("%s: %v", heading, err)
				continue
			}
			for _, row := range rows {
				if len(row) != len(header) {
					t.Errorf("%s: row %q has %d cells, the header %d", heading, row, len(row), len(header))
				}
			}
		} else if !strings.Contains(doc.String(), heading+"\n") {
			t.Errorf("the report lacks %s", heading)
		}
	}
	if !strings.Contains(doc.String(), "Every run kept every acknowledged pod") {
		t.Errorf("the report's verdict is not a pass:\n%s", doc.String())
	}
}

// TestSoakInitialResourcesFlood runs `make soak`'s InitialResources flood at make test's
// size: ours with InitialResources alone, its Prometheus a stand-in that holds every query,
// and dry-run creates each with an image string of its own. The server's goroutines and RSS
// must grow by no more than the ceilings derived from the plugin's documented bounds, the
// stand-in must never hold more queries than the plugin runs, and lookups must have been
// shed (else the flood never reached the bound and the ceilings proved nothing). Without
// the bounds, each image held a goroutine and a connection: 500 images are far over the
// goroutine ceiling.
func TestSoakInitialResourcesFlood(t *testing.T) {
	t.Parallel()
	bins := framework.FindBinaries(t)
	opts := soak.SmokeOptions()
	opts.BinDir = bins.Dir
	opts.WorkDir = t.TempDir()
	opts.Progress = testLog{t}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := soak.RunIRFlood(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("goroutines %d → %d (peak %d), RSS %d → %d MiB (peak %d MiB); flood %s, %d queries (at most %d held), %.0f shed",
		r.Before.Goroutines, r.After.Goroutines, r.Peak.Goroutines, r.Before.RSS>>20, r.After.RSS>>20, r.Peak.RSS>>20,
		r.Flood.Elapsed().Round(time.Millisecond), r.Queries, r.MaxHeld, r.Shed)

	n := opts.IRFlood.Images
	// Unbounded, each reference held a goroutine: there must be more than the ceiling allows.
	if refs := r.Mix[soak.IRFloodImageReference]; refs <= soak.IRFloodPeakGoroutineCeiling(opts.IRFlood.Clients) {
		t.Fatalf("the flood's %d references are within the goroutine ceiling: a goroutine per image would pass", refs)
	}
	for name, p := range map[string]soak.FloodPass{"control": r.Control, "flood": r.Flood} {
		if p.Sent != n || p.Admitted != n {
			t.Errorf("%s pass: %d of %d sent, %d admitted; failures %v", name, p.Sent, n, p.Admitted, p.Failures)
		}
	}
	if r.Before.Goroutines <= 0 || r.Before.RSS == 0 || r.After.RSS == 0 {
		t.Fatalf("usage not read: before %+v, after %+v", r.Before, r.After)
	}
	if g := r.GoroutineGrowth(); g > soak.IRFloodGoroutineCeiling {
		t.Errorf("goroutines grew by %d over the flood, over the ceiling of %d", g, soak.IRFloodGoroutineCeiling)
	}
	if g, c := r.PeakGoroutineGrowth(), soak.IRFloodPeakGoroutineCeiling(opts.IRFlood.Clients); g > c {
		t.Errorf("goroutines grew by %d at the flood's peak, over the ceiling of %d", g, c)
	}
	if g := r.PeakRSSGrowth(); g > soak.IRFloodRSSCeiling {
		t.Errorf("RSS grew by %d MiB at the flood's peak, over the ceiling of %d MiB", g>>20, soak.IRFloodRSSCeiling>>20)
	}
	if r.Queries == 0 || r.MaxHeld < 1 || r.MaxHeld > soak.IRFloodMaxQueries {
		t.Errorf("the stand-in received %d queries and held at most %d at once, want some and at most %d", r.Queries, r.MaxHeld, soak.IRFloodMaxQueries)
	}
	if r.Shed < 1 {
		t.Errorf("no lookup was shed: the flood never reached the plugin's bound")
	}
	if r.Panics.Count != 0 {
		t.Errorf("%d panic lines in the logs: %q", r.Panics.Count, r.Panics.First)
	}

	results := &soak.Results{Options: opts, IRFlood: r}
	if failures := results.Failures(); len(failures) != 0 {
		t.Errorf("the soak reports problems:\n%s", strings.Join(failures, "\n"))
	}
	var doc bytes.Buffer
	if err := soak.WriteReport(&doc, results); err != nil {
		t.Fatal(err)
	}
	header, rows, err := tableAfter(doc.String(), "## 6. InitialResources under a flood of distinct images")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Errorf("the flood's table has %d rows, want 6:\n%s", len(rows), doc.String())
	}
	for _, row := range rows {
		if len(row) != len(header) {
			t.Errorf("row %q has %d cells, the header %d", row, len(row), len(header))
		}
	}
}
