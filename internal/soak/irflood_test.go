package soak

import (
	"bytes"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// TestFloodImage checks the flood's image strings against the reference parser itself and
// the plugin's documented 1,024-byte limit, not against floodImage's own labels.
func TestFloodImage(t *testing.T) {
	const n = 800
	seen := map[string]bool{}
	kinds := map[string]int{}
	for _, pass := range []string{"control", "short", "long"} {
		for i := range n {
			image, kind := floodImage(pass, i)
			if seen[image] {
				t.Fatalf("%s %d: %q sent twice", pass, i, image)
			}
			seen[image] = true
			if strings.TrimSpace(image) != image || image == "" {
				t.Errorf("%q: the pod's validation refuses leading or trailing space", image)
			}
			named, err := reference.ParseNormalizedNamed(image)
			parses := err == nil
			switch kind {
			case IRFloodImageReference:
				if !parses || len(image) > 1024 {
					t.Errorf("%q (%s): parses %v, %d bytes; want a reference the plugin looks up", image, kind, err, len(image))
				}
				// Long enough for the long pass to reach the byte bound before the entry
				// bound (about 500 bytes an entry, against 160 KiB / 400 entries = 410).
				if pass == "long" && len(named.String()) < 230 {
					t.Errorf("%q: %d bytes, want about 240", image, len(named.String()))
				}
				if pass == "short" && len(named.String()) > 60 {
					t.Errorf("%q: %d bytes, want about 50", image, len(named.String()))
				}
			case IRFloodImageOverLimit:
				if len(image) <= 1024 {
					t.Errorf("%q… (%s): %d bytes; want over the limit", image[:40], kind, len(image))
				}
			case IRFloodImageUnparsable:
				if parses {
					t.Errorf("%q (%s) parses", image, kind)
				}
			default:
				t.Errorf("%q: unknown kind %q", image, kind)
			}
			if pass == "short" {
				kinds[kind]++
			}
		}
	}
	if kinds[IRFloodImageReference] != n*3/4 || kinds[IRFloodImageOverLimit] != n/8 || kinds[IRFloodImageUnparsable] != n/8 {
		t.Errorf("mix %v, want three quarters references, an eighth each of the others", kinds)
	}
	if p := floodPod("control", 3, true); len(p.Spec.Containers[0].Resources.Requests) != 2 {
		t.Errorf("the control pod's requests: %v, want cpu and memory (nothing for the plugin to estimate)", p.Spec.Containers[0].Resources.Requests)
	}
	if p := floodPod("short", 3, false); len(p.Spec.Containers[0].Resources.Requests) != 0 {
		t.Errorf("the flood pod sets requests: %v", p.Spec.Containers[0].Resources.Requests)
	}
}

func TestParseMetrics(t *testing.T) {
	m := parseMetrics([]byte(`# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 2339
portcullis_initialresources_lookups_shed_total{source="Prometheus"} 234
process_resident_memory_bytes 3.1e+08
garbage
`))
	want := map[string]float64{"go_goroutines": 2339, `portcullis_initialresources_lookups_shed_total{source="Prometheus"}`: 234, "process_resident_memory_bytes": 3.1e8}
	if len(m) != len(want) {
		t.Errorf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}

func TestIRFloodCeilings(t *testing.T) {
	// The documented bounds: 64 goroutines, 16 MiB of caches and 32 MiB of samples, 4 queries.
	if irPluginGoroutines != 64 || irPluginBytes(4<<20) != 48<<20 || IRFloodMaxQueries != 4 {
		t.Errorf("bounds %d goroutines, %d bytes, %d queries; the plugin's docs say 64, 48 MiB, 4", irPluginGoroutines, irPluginBytes(4<<20), IRFloodMaxQueries)
	}
	const entries, cacheBytes = 400, 160 << 10
	pass := func(n int) FloodPass { return FloodPass{Sent: n, Admitted: n} }
	full := func(entries, bytes float64) map[string]CacheReading {
		return map[string]CacheReading{"history": {Entries: entries, Bytes: bytes, LargestShare: 0.2}, "cluster": {Entries: entries, Bytes: bytes, LargestShare: 0.2}}
	}
	ok := func() *IRFloodResult {
		return &IRFloodResult{
			Options: IRFloodOptions{Images: 2400, Clients: 6, Namespaces: 6, CacheEntries: entries, CacheBytes: cacheBytes}, Control: pass(2400), Short: pass(1200), Long: pass(1000),
			Before: ServerUsage{Goroutines: 2000, RSS: 300 << 20}, After: ServerUsage{Goroutines: 2020, RSS: 302 << 20},
			Peak:       ServerUsage{Goroutines: 2050, RSS: 310 << 20, Caches: full(entries, cacheBytes)},
			AfterShort: full(entries, 130<<10), AfterLong: full(320, cacheBytes-100),
			QuietBefore: true, QuietAfter: true, Queries: 2, MaxHeld: 2,
		}
	}
	if f := ok().failures(); len(f) != 0 {
		t.Errorf("a flood within its ceilings fails: %v", f)
	}
	cases := map[string]struct {
		mutate func(*IRFloodResult)
		want   string
	}{
		"goroutines":          {func(r *IRFloodResult) { r.After.Goroutines = r.Before.Goroutines + IRFloodGoroutineCeiling + 1 }, "goroutines grew by 141"},
		"peak goroutines":     {func(r *IRFloodResult) { r.Peak.Goroutines = 2000 + IRFloodPeakGoroutineCeiling(r.Options.Clients) + 1 }, "at the flood's peak"},
		"rss":                 {func(r *IRFloodResult) { r.Peak.RSS = r.Before.RSS + uint64(IRFloodRSSCeiling(cacheBytes)) + 1 }, "RSS grew"},
		"held":                {func(r *IRFloodResult) { r.MaxHeld = IRFloodMaxQueries + 1 }, "held 5 queries"},
		"no queries":          {func(r *IRFloodResult) { r.Queries = 0 }, "no query"},
		"entries over":        {func(r *IRFloodResult) { r.Peak.Caches["history"] = CacheReading{Entries: entries + 1} }, "history cache kept 401 entries, over its bound"},
		"bytes over":          {func(r *IRFloodResult) { r.Peak.Caches["cluster"] = CacheReading{Bytes: cacheBytes + 1} }, "cluster cache kept"},
		"entries not reached": {func(r *IRFloodResult) { r.AfterShort["history"] = CacheReading{Entries: entries - 1} }, "did not reach it"},
		"bytes not reached":   {func(r *IRFloodResult) { r.AfterLong["cluster"] = CacheReading{Bytes: cacheBytes - 2000} }, "did not reach it"},
		"one namespace's share": {func(r *IRFloodResult) {
			r.Peak.Caches["history"] = CacheReading{Entries: entries, LargestShare: 0.3}
		}, "over its share"},
		"quiet evicted":         {func(r *IRFloodResult) { r.QuietAfter = false }, "did not survive"},
		"quiet never estimated": {func(r *IRFloodResult) { r.QuietBefore = false }, "got no estimate before"},
		"refused": {func(r *IRFloodResult) {
			r.Short.Admitted, r.Short.Failures = 1199, map[string]int{"500 InternalError": 1}
		}, "1 dry-run creates failed"},
		"unsent": {func(r *IRFloodResult) { r.Control.Sent, r.Control.Admitted = 2390, 2390 }, "10 creates not sent"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := ok()
			c.mutate(r)
			f := strings.Join(r.failures(), "\n")
			if !strings.Contains(f, c.want) {
				t.Errorf("failures %q, want one mentioning %q", f, c.want)
			}
			var doc bytes.Buffer
			if err := WriteReport(&doc, &Results{IRFlood: r}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(doc.String(), "Problems found") {
				t.Errorf("the report's verdict passes a failed flood")
			}
		})
	}
}

// TestFloodNamespace: half the flood is the greedy namespace's, the rest evenly the others'.
func TestFloodNamespace(t *testing.T) {
	namespaces := []string{"g", "a", "b", "c"}
	counts := map[string]int{}
	for i := range 600 {
		counts[floodNamespace(namespaces, i)]++
	}
	if counts["g"] != 300 || counts["a"] != 100 || counts["b"] != 100 || counts["c"] != 100 {
		t.Errorf("pods per namespace %v, want half in g and the rest evenly", counts)
	}
}

// TestProofFailures: the unbounded build's flood must fail each bound's check.
func TestProofFailures(t *testing.T) {
	failing := &IRFloodResult{Options: IRFloodOptions{Images: 1200, Clients: 6, Namespaces: 6, CacheEntries: 400, CacheBytes: 160 << 10},
		Peak: ServerUsage{Caches: map[string]CacheReading{"history": {Entries: 900, Bytes: 400 << 10, LargestShare: 0.5}}}}
	if f := failing.ProofFailures(); len(f) != 0 {
		t.Errorf("a flood over every bound: %v", f)
	}
	within := &IRFloodResult{Options: failing.Options, Peak: ServerUsage{Caches: map[string]CacheReading{"history": {Entries: 400, Bytes: 100 << 10, LargestShare: 0.25}}}}
	if f := within.ProofFailures(); len(f) != 3 {
		t.Errorf("a flood within every bound: %d proof failures %v, want 3 (entries, bytes, share)", len(f), f)
	}
}
