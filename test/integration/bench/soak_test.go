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
// size: ours with InitialResources alone and caches of 400 entries and 160 KiB, its
// Prometheus a stand-in that answers at once, and dry-run creates from six namespaces (half
// from a greedy one) each with an image of its own, short references then long ones. The caches must reach each
// bound and never pass it, a quiet namespace's estimate must survive, and the server's
// goroutines and RSS must stay within their ceilings. Then the same flood on the server
// built with portcullis_unbounded_caches must fail the entry, byte and share checks:
// without the caches' limits, the proof fails.
func TestSoakInitialResourcesFlood(t *testing.T) {
	t.Parallel()
	bins := framework.FindBinaries(t)
	opts := soak.SmokeOptions()
	opts.BinDir = bins.Dir
	opts.WorkDir = t.TempDir()
	opts.Progress = testLog{t}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	r, err := soak.RunIRFlood(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("goroutines %d → %d (peak %d), RSS %d → %d MiB (peak %d MiB); passes %s + %s, %d queries (at most %d held); caches at the peak %+v",
		r.Before.Goroutines, r.After.Goroutines, r.Peak.Goroutines, r.Before.RSS>>20, r.After.RSS>>20, r.Peak.RSS>>20,
		r.Short.Elapsed().Round(time.Millisecond), r.Long.Elapsed().Round(time.Millisecond), r.Queries, r.MaxHeld, r.Peak.Caches)

	n, o := opts.IRFlood.Images, opts.IRFlood
	if r.Control.Sent != n || r.Control.Admitted != n {
		t.Errorf("control pass: %d of %d sent, %d admitted; failures %v", r.Control.Sent, n, r.Control.Admitted, r.Control.Failures)
	}
	// The flood's passes stop once they filled the caches: each admits all it sent.
	for name, p := range map[string]soak.FloodPass{"short": r.Short, "long": r.Long} {
		if p.Sent == 0 || p.Admitted != p.Sent {
			t.Errorf("%s pass: %d sent, %d admitted; failures %v", name, p.Sent, p.Admitted, p.Failures)
		}
	}
	if r.Before.Goroutines <= 0 || r.Before.RSS == 0 || r.After.RSS == 0 {
		t.Fatalf("usage not read: before %+v, after %+v", r.Before, r.After)
	}
	for _, c := range []string{"history", "cluster"} {
		if got := r.AfterShort[c].Entries; got != float64(o.CacheEntries) {
			t.Errorf("the %s cache holds %.0f entries after the short references, want its bound, %d", c, got, o.CacheEntries)
		}
		if got := r.Peak.Caches[c]; got.Entries > float64(o.CacheEntries) || got.Bytes > float64(o.CacheBytes) || got.LargestShare > 0.25 || got.LargestShare < 0.2 {
			t.Errorf("the %s cache at its peak: %+v; bounds %d entries, %d bytes, a quarter for a namespace (and the greedy one near it)", c, got, o.CacheEntries, o.CacheBytes)
		}
		if got := r.AfterLong[c].Bytes; got > float64(o.CacheBytes) || got < float64(o.CacheBytes)-2048 {
			t.Errorf("the %s cache holds %.0f bytes after the long references, want its bound, %d, within an entry", c, got, o.CacheBytes)
		}
	}
	if !r.QuietBefore || !r.QuietAfter {
		t.Errorf("the quiet namespace's estimate: before the flood %t, after it %t; want both", r.QuietBefore, r.QuietAfter)
	}
	if g := r.GoroutineGrowth(); g > soak.IRFloodGoroutineCeiling {
		t.Errorf("goroutines grew by %d over the flood, over the ceiling of %d", g, soak.IRFloodGoroutineCeiling)
	}
	if g, c := r.PeakGoroutineGrowth(), soak.IRFloodPeakGoroutineCeiling(o.Clients); g > c {
		t.Errorf("goroutines grew by %d at the flood's peak, over the ceiling of %d", g, c)
	}
	if g, c := r.PeakRSSGrowth(), soak.IRFloodRSSCeiling(o.CacheBytes); g > c {
		t.Errorf("RSS grew by %d MiB at the flood's peak, over the ceiling of %d MiB", g>>20, c>>20)
	}
	if r.Queries == 0 || r.MaxHeld < 1 || r.MaxHeld > soak.IRFloodMaxQueries {
		t.Errorf("the stand-in received %d queries and held at most %d at once, want some and at most %d", r.Queries, r.MaxHeld, soak.IRFloodMaxQueries)
	}
	if r.Panics.Count != 0 {
		t.Errorf("%d panic lines in the logs: %q", r.Panics.Count, r.Panics.First)
	}

	unboundedOpts := opts
	unboundedOpts.IRFlood.Unbounded = true
	u, err := soak.RunIRFlood(ctx, unboundedOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.AfterShort["history"].Entries; got <= float64(o.CacheEntries) {
		t.Errorf("unbounded, the history cache holds %.0f entries after the short references; want more than %d, or the flood proves nothing", got, o.CacheEntries)
	}
	if failures := u.ProofFailures(); len(failures) != 0 {
		t.Errorf("the checks pass a server whose caches are unbounded:\n%s", strings.Join(failures, "\n"))
	}

	results := &soak.Results{Options: opts, IRFlood: r, IRFloodUnbounded: u}
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
	if len(rows) != 3 {
		t.Errorf("the flood's first table has %d rows, want 3 (two caches and the bounds):\n%s", len(rows), doc.String())
	}
	for _, row := range rows {
		if len(row) != len(header) {
			t.Errorf("row %q has %d cells, the header %d", row, len(row), len(header))
		}
	}
}
