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
	for _, pass := range []string{"control", "flood"} {
		for i := range n {
			image, kind := floodImage(pass, i)
			if seen[image] {
				t.Fatalf("%s %d: %q sent twice", pass, i, image)
			}
			seen[image] = true
			if strings.TrimSpace(image) != image || image == "" {
				t.Errorf("%q: the pod's validation refuses leading or trailing space", image)
			}
			_, err := reference.ParseNormalizedNamed(image)
			parses := err == nil
			switch kind {
			case IRFloodImageReference:
				if !parses || len(image) > 1024 {
					t.Errorf("%q (%s): parses %v, %d bytes; want a reference the plugin looks up", image, kind, err, len(image))
				}
			case IRFloodImageLong:
				if parses || len(image) > 1024 || len(image) < 900 {
					t.Errorf("%q… (%s): parses %v, %d bytes; want ~1 KiB, within the limit, not a reference", image[:40], kind, parses, len(image))
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
			if pass == "flood" {
				kinds[kind]++
			}
		}
	}
	if kinds[IRFloodImageReference] != n/2 || kinds[IRFloodImageLong] != n/8 || kinds[IRFloodImageOverLimit] != n/8 || kinds[IRFloodImageUnparsable] != n/4 {
		t.Errorf("mix %v, want half references, an eighth each of the long kinds, a quarter unparsable", kinds)
	}
	if p := floodPod("control", 3, true); len(p.Spec.Containers[0].Resources.Requests) != 2 {
		t.Errorf("the control pod's requests: %v, want cpu and memory (nothing for the plugin to estimate)", p.Spec.Containers[0].Resources.Requests)
	}
	if p := floodPod("flood", 3, false); len(p.Spec.Containers[0].Resources.Requests) != 0 {
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
	if irPluginGoroutines != 64 || irPluginBytes != 48<<20 || IRFloodMaxQueries != 4 {
		t.Errorf("bounds %d goroutines, %d bytes, %d queries; the plugin's docs say 64, 48 MiB, 4", irPluginGoroutines, irPluginBytes, IRFloodMaxQueries)
	}
	pass := func(n int) FloodPass { return FloodPass{Sent: n, Admitted: n} }
	ok := func() *IRFloodResult {
		return &IRFloodResult{
			Options: IRFloodOptions{Images: 100, Clients: 4}, Control: pass(100), Flood: pass(100),
			Before: ServerUsage{Goroutines: 2000, RSS: 300 << 20}, After: ServerUsage{Goroutines: 2020, RSS: 302 << 20},
			Peak: ServerUsage{Goroutines: 2050, RSS: 310 << 20}, Queries: 2, MaxHeld: 2, Shed: 30,
		}
	}
	if f := ok().failures(); len(f) != 0 {
		t.Errorf("a flood within its ceilings fails: %v", f)
	}
	cases := map[string]struct {
		mutate func(*IRFloodResult)
		want   string
	}{
		"goroutines":      {func(r *IRFloodResult) { r.After.Goroutines = r.Before.Goroutines + IRFloodGoroutineCeiling + 1 }, "goroutines grew by 141"},
		"peak goroutines": {func(r *IRFloodResult) { r.Peak.Goroutines = 2000 + IRFloodPeakGoroutineCeiling(4) + 1 }, "at the flood's peak"},
		"rss":             {func(r *IRFloodResult) { r.Peak.RSS = r.Before.RSS + IRFloodRSSCeiling + 1 }, "RSS grew"},
		"held":            {func(r *IRFloodResult) { r.MaxHeld = IRFloodMaxQueries + 1 }, "held 5 queries"},
		"no queries":      {func(r *IRFloodResult) { r.Queries = 0 }, "no query"},
		"nothing shed":    {func(r *IRFloodResult) { r.Shed = 0 }, "no lookup was shed"},
		"refused": {func(r *IRFloodResult) {
			r.Flood.Admitted, r.Flood.Failures = 99, map[string]int{"500 InternalError": 1}
		}, "1 dry-run creates failed"},
		"unsent": {func(r *IRFloodResult) { r.Control.Sent, r.Control.Admitted = 90, 90 }, "10 creates not sent"},
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
