// Package bench smoke-tests `make bench`'s harness: it runs every table at a tiny size
// against the real binaries and checks the results and docs/benchmarks.md's structure. It
// asserts nothing about timing: a shared CI machine can be as slow as it likes.
package bench

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/bench"
	ouradmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// fanOutWebhooks are the fan-out sizes the smoke test runs: enough to have more than one.
var fanOutWebhooks = []int{1, 2}

// dispatchWebhooks are the dispatch comparison's sizes in the smoke test.
var dispatchWebhooks = []int{2}

func TestHarness(t *testing.T) {
	// Beside TestSoakSmoke: both mostly wait on servers they start on ports of their own.
	t.Parallel()
	bins := framework.FindBinaries(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the harness runs the plugins' benchmarks with go, which is not on PATH: %v", err)
	}
	tiny := bench.LoadOptions{Creates: 6, WarmUp: 2, Clients: 2, Timeout: 2 * time.Minute}
	opts := bench.Options{
		BinDir:   bins.Dir,
		RepoRoot: framework.RepoRoot(t),
		WorkDir:  t.TempDir(),
		GoTool:   goTool,
		Progress: testLog{t},
		DropIn:   bench.DropInOptions{Starts: 1, Load: tiny, ListPods: 20, Lists: 2, Watchers: 3, WatchCreates: 4},
		Policy:   bench.PolicyOptions{Repetitions: 1, Load: tiny},
		FanOut:   bench.FanOutOptions{Webhooks: fanOutWebhooks, Hold: 20 * time.Millisecond, Repetitions: 1, Load: tiny},
		Plugins:  bench.PluginOptions{Count: 1, BenchTime: "10x"},
		Dispatch: bench.DispatchOptions{
			Webhooks: dispatchWebhooks, Repetitions: 1, Load: bench.LoadOptions{Creates: 6, WarmUp: 2, Clients: 1, Timeout: 2 * time.Minute},
			DeadTimeoutSeconds: 1, DeadCreates: 3, StockDeadCreates: 1, SlowHold: time.Second, SlowCreates: 1,
			ProfileWindow: time.Second,
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	results, err := bench.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("drop-in runs", func(t *testing.T) {
		d := results.DropIn
		if len(d.Ours) != 1 || len(d.Stock) != 1 {
			t.Fatalf("got %d runs of ours and %d of stock, want 1 each", len(d.Ours), len(d.Stock))
		}
		for name, run := range map[string]bench.DropInRun{"ours": d.Ours[0], "stock": d.Stock[0]} {
			if run.ReadyAfter <= 0 || run.RSSReady == 0 || run.RSSAfterLoad == 0 {
				t.Errorf("%s: ready after %s, RSS %d then %d: want all measured", name, run.ReadyAfter, run.RSSReady, run.RSSAfterLoad)
			}
			checkLoad(t, name, run.Load, tiny)
			if run.List == nil || run.List.Count() != 2 {
				t.Errorf("%s: timed lists %v, want 2", name, run.List)
			}
			if run.WatchDelivered <= 0 {
				t.Errorf("%s: watch fan-out delivered in %s, want it measured", name, run.WatchDelivered)
			}
		}
		if d.OursBinarySize == 0 || d.StockBinarySize == 0 {
			t.Errorf("binary sizes %d and %d: want both measured", d.OursBinarySize, d.StockBinarySize)
		}
		if results.Ours.Version == "" || results.Stock.Version == "" {
			t.Errorf("binary versions %q and %q: want both read", results.Ours.Version, results.Stock.Version)
		}
	})

	t.Run("policy runs", func(t *testing.T) {
		want := []string{bench.PolicyBaseline, bench.PolicyPlugin, bench.PolicyCEL, bench.PolicyWebhook}
		var got []string
		for _, c := range results.Policy.Configs {
			got = append(got, c.Name)
			if len(c.Runs) != 1 {
				t.Errorf("%s: %d runs, want 1", c.Name, len(c.Runs))
				continue
			}
			checkLoad(t, c.Name, c.Runs[0], tiny)
		}
		if !slices.Equal(got, want) {
			t.Errorf("configurations %q, want %q", got, want)
		}
	})

	t.Run("fan-out runs", func(t *testing.T) {
		f := results.FanOut
		if len(f.Baseline) != 1 {
			t.Fatalf("%d baseline runs, want 1", len(f.Baseline))
		}
		checkLoad(t, "baseline", f.Baseline[0], tiny)
		for kind, configs := range map[string][]bench.FanOutRuns{"validating": f.Validating, "mutating": f.Mutating} {
			var sizes []int
			for _, c := range configs {
				sizes = append(sizes, c.Webhooks)
				if len(c.Runs) != 1 {
					t.Errorf("%d %s: %d runs, want 1", c.Webhooks, kind, len(c.Runs))
					continue
				}
				checkLoad(t, kind, c.Runs[0], tiny)
			}
			if !slices.Equal(sizes, fanOutWebhooks) {
				t.Errorf("%s webhook counts %v, want %v", kind, sizes, fanOutWebhooks)
			}
		}
	})

	t.Run("dispatch runs", func(t *testing.T) {
		d := results.Dispatch
		for _, server := range []string{"ours", "ours, no settings", "stock"} {
			configs := d.Overhead[server]
			if len(configs) != 3*len(dispatchWebhooks) {
				t.Fatalf("%s: %d overhead configurations, want %d", server, len(configs), 3*len(dispatchWebhooks))
			}
			for _, c := range configs {
				if len(c.Runs) != 1 || len(c.Baseline) != 1 || len(c.ServerSide) != 1 {
					t.Errorf("%s, %d %s: %d runs, %d baselines, %d at the API server, want 1 each", server, c.Webhooks, c.Kind, len(c.Runs), len(c.Baseline), len(c.ServerSide))
					continue
				}
				checkLoad(t, server+" "+c.Kind, c.Runs[0], d.Options.Load)
				checkLoad(t, server+" "+c.Kind+" baseline", c.Baseline[0], d.Options.Load)
				// What the webhooks spent is taken from each create: never more than it took.
				if side := c.ServerSide[0]; side.Count() != d.Options.Load.Creates || side.Percentile(50) <= 0 || side.Percentile(100) > c.Runs[0].Latencies.Percentile(100) {
					t.Errorf("%s, %d %s: at the API server %d creates, p50 %s, max %s: want every create, positive, within its latency",
						server, c.Webhooks, c.Kind, side.Count(), side.Percentile(50), side.Percentile(100))
				}
			}
			if server == "ours, no settings" {
				// Only the overhead runs: the dead-webhook and fast-deny rows compare our
				// dispatch with stock.
				continue
			}
			runs, creates := d.Options.Repetitions, d.Options.DeadCreates
			if server == "stock" {
				runs, creates = 1, d.Options.StockDeadCreates
			}
			if len(d.Dead[server]) != runs {
				t.Errorf("%s: %d dead-webhook runs, want %d", server, len(d.Dead[server]), runs)
			}
			for _, run := range d.Dead[server] {
				if run.With.Count() != creates || run.Without.Count() != creates {
					t.Errorf("%s, dead webhook: %d and %d creates, want %d of each", server, run.With.Count(), run.Without.Count(), creates)
				}
			}
			if l := d.FastDeny[server]; l == nil || l.Count() != d.Options.SlowCreates {
				t.Errorf("%s, fast deny: %v latencies, want %d", server, l, d.Options.SlowCreates)
			}
		}
		if len(d.CallAlone) != 3*len(dispatchWebhooks) {
			t.Errorf("%d configurations' calls alone, want %d", len(d.CallAlone), 3*len(dispatchWebhooks))
		}
		for i, runs := range d.CallAlone {
			if len(runs) != 1 || runs[0].Count() != d.Options.Load.Creates || runs[0].Percentile(50) <= 0 {
				t.Errorf("configuration %d, the call alone: %d runs (want 1) of %v calls (want %d, each positive less the webhook's handling)", i, len(runs), runs, d.Options.Load.Creates)
			}
		}
		if len(d.Profiles) != 2 {
			t.Fatalf("%d profiles, want ours and stock's", len(d.Profiles))
		}
		for _, p := range d.Profiles {
			if p.Creates == 0 || p.Dispatch <= 0 || len(p.Top) == 0 || p.PerCall() <= 0 {
				t.Errorf("%s's profile: %d creates, %s under Dispatch, %d functions: want all measured", p.Server, p.Creates, p.Dispatch, len(p.Top))
			}
		}
	})

	t.Run("every plugin and decorator of ours has an ignored and a checked benchmark", func(t *testing.T) {
		p := results.Plugins
		var registry []string
		for _, plugin := range ouradmission.Plugins() {
			registry = append(registry, plugin.Name)
		}
		_, decorators, err := bench.Decorators()
		if err != nil {
			t.Fatal(err)
		}
		registry = append(registry, decorators...)
		if !slices.Equal(p.Plugins, registry) {
			t.Errorf("plugins %q, want the registry's %q", p.Plugins, registry)
		}
		for _, plugin := range registry {
			for _, kind := range []string{bench.CaseIgnored, bench.CaseChecked} {
				cases := p.CasesOf(plugin, kind)
				if len(cases) == 0 {
					t.Errorf("%s has no %s benchmark case", plugin, kind)
				}
				for _, c := range cases {
					if len(c.NsPerOp) != 1 || len(c.BytesPerOp) != 1 || len(c.AllocsPerOp) != 1 {
						t.Errorf("%s: %d, %d, %d values, want 1 of each with -count 1", c.Name, len(c.NsPerOp), len(c.BytesPerOp), len(c.AllocsPerOp))
					}
				}
			}
		}
	})

	t.Run("docs/benchmarks.md", func(t *testing.T) {
		var doc bytes.Buffer
		if err := bench.WriteMarkdown(&doc, results); err != nil {
			t.Fatal(err)
		}
		text := doc.String()
		for _, want := range []string{"Measured on ", results.Machine.CPUModel, "## Notes"} {
			if !strings.Contains(text, want) {
				t.Errorf("the document does not say %q", want)
			}
		}
		pluginRows := 0
		for _, b := range results.Plugins.Benchmarks {
			pluginRows += len(b.Plugins)
		}
		for _, table := range []struct {
			heading string
			columns int
			rows    int
		}{
			{bench.HeadingDropIn, 6, 12},
			{bench.HeadingPolicy, 7, 4},
			{bench.HeadingFanOut, 8, 1 + 2*len(fanOutWebhooks)},
			{bench.HeadingPlugins, 8, pluginRows},
			{bench.HeadingDispatch, 11, 3 * len(dispatchWebhooks)},
		} {
			header, rows, err := tableAfter(text, table.heading)
			if err != nil {
				t.Errorf("%s: %v", table.heading, err)
				continue
			}
			if len(header) != table.columns {
				t.Errorf("%s: %d columns %q, want %d", table.heading, len(header), header, table.columns)
			}
			if len(rows) != table.rows {
				t.Errorf("%s: %d rows, want %d", table.heading, len(rows), table.rows)
			}
			for _, row := range rows {
				if len(row) != len(header) {
					t.Errorf("%s: row %q has %d cells, the header %d", table.heading, row, len(row), len(header))
				}
				for _, cell := range row {
					if cell == "" || strings.Contains(cell, "NaN") || strings.Contains(cell, "Inf") {
						t.Errorf("%s: row %q has a cell %q that is empty or not a number", table.heading, row, cell)
					}
				}
			}
		}
	})
}

// checkLoad checks a run timed every create it was asked for, with consistent figures.
func checkLoad(t *testing.T, name string, run bench.LoadRun, opts bench.LoadOptions) {
	t.Helper()
	if run.Creates != opts.Creates || run.Latencies.Count() != opts.Creates || run.Clients != opts.Clients {
		t.Errorf("%s: %d creates (%d timed) from %d clients, want %d from %d", name, run.Creates, run.Latencies.Count(), run.Clients, opts.Creates, opts.Clients)
	}
	if run.Elapsed <= 0 || run.Throughput() <= 0 || run.P50() <= 0 || run.P99() < run.P50() {
		t.Errorf("%s: elapsed %s, %.1f/s, p50 %s, p99 %s: want positive figures and p99 ≥ p50", name, run.Elapsed, run.Throughput(), run.P50(), run.P99())
	}
}

// tableAfter returns the header cells and the rows of the first Markdown table after heading.
func tableAfter(doc, heading string) (header []string, rows [][]string, err error) {
	_, section, ok := strings.Cut(doc, heading+"\n")
	if !ok {
		return nil, nil, errors.New("no heading")
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	var table []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			table = append(table, line)
		} else if len(table) > 0 {
			break
		}
	}
	if len(table) < 2 || !strings.HasPrefix(table[1], "|---") {
		return nil, nil, errors.New("no table with a header row")
	}
	for i, line := range table {
		if i == 1 {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if i == 0 {
			header = cells
		} else {
			rows = append(rows, cells)
		}
	}
	return header, rows, nil
}

// testLog sends the harness's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
