package soak

import (
	"math"
	"testing"
	"time"
)

func TestHistogramPercentiles(t *testing.T) {
	var h Histogram
	if h.Percentile(50) != 0 || h.Count() != 0 || h.Mean() != 0 {
		t.Fatal("an empty histogram reports non-zero figures")
	}
	// 1ms, 2ms, ..., 100ms: the nearest-rank p-th percentile is p ms.
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, p := range []float64{1, 50, 90, 99} {
		want := time.Duration(p) * time.Millisecond
		got := h.Percentile(p)
		if got < want || float64(got) > float64(want)*histogramGrowth {
			t.Errorf("p%v = %s, want within 1%% above %s", p, got, want)
		}
	}
	if got := h.Percentile(100); got != 100*time.Millisecond {
		t.Errorf("p100 = %s, want the exact maximum 100ms", got)
	}
	if h.Max() != 100*time.Millisecond || h.Count() != 100 {
		t.Errorf("max %s, count %d", h.Max(), h.Count())
	}
	if got, want := h.Mean(), 50500*time.Microsecond; got != want {
		t.Errorf("mean %s, want %s", got, want)
	}
	for _, p := range []float64{0, -1, math.NaN()} {
		if got := h.Percentile(p); got != 0 {
			t.Errorf("p%v = %s, want 0", p, got)
		}
	}
	if got := h.Percentile(1000); got != h.Max() {
		t.Errorf("p1000 = %s, want the maximum", got)
	}
}

func TestHistogramExtremesAndMerge(t *testing.T) {
	var a, b Histogram
	a.Record(-time.Second) // counts as zero
	a.Record(0)
	b.Record(time.Hour) // beyond the last bucket: clamped, maximum kept exactly
	b.Record(3 * time.Millisecond)
	a.Merge(&b)
	if a.Count() != 4 || a.Max() != time.Hour {
		t.Fatalf("count %d, max %s after merge", a.Count(), a.Max())
	}
	if got := a.Percentile(50); got > time.Microsecond {
		t.Errorf("p50 = %s, want at most the first bucket's 1µs", got)
	}
	if got := a.Percentile(75); got < 3*time.Millisecond || got > 3031*time.Microsecond {
		t.Errorf("p75 = %s, want 3ms within 1%%", got)
	}
	if got := a.Percentile(100); got != time.Hour {
		t.Errorf("p100 = %s, want 1h", got)
	}
}
