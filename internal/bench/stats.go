package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Latencies is the full set of latencies one load run recorded. Percentiles come from the
// sorted samples themselves (nearest rank), so each is a latency that was observed, never
// an interpolation or an estimate.
type Latencies struct {
	sorted []time.Duration
}

// newLatencies takes ownership of samples and sorts them.
func newLatencies(samples []time.Duration) *Latencies {
	slices.Sort(samples)
	return &Latencies{sorted: samples}
}

// Count is the number of samples.
func (l *Latencies) Count() int { return len(l.sorted) }

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100): the smallest sample
// that at least p% of the samples do not exceed. It returns 0 when there are no samples.
func (l *Latencies) Percentile(p float64) time.Duration {
	n := len(l.sorted)
	if n == 0 || p <= 0 || math.IsNaN(p) {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return l.sorted[rank-1]
}

// Summary is the median of repeated measurements with their range.
type Summary struct {
	Median, Min, Max float64
	// N is how many measurements there were.
	N int
}

// summarize returns the median (the mean of the middle two for an even count), minimum and
// maximum of values. An empty input gives a zero Summary.
func summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return Summary{Median: median, Min: sorted[0], Max: sorted[n-1], N: n}
}

// summarizeEach summarizes f over runs.
func summarizeEach[T any](runs []T, f func(T) float64) Summary {
	values := make([]float64, len(runs))
	for i, r := range runs {
		values[i] = f(r)
	}
	return summarize(values)
}

// pairedRatios returns a[i]/b[i] for runs measured side by side; it fails if the lengths
// differ or a divisor is zero, rather than report a meaningless ratio.
func pairedRatios(a, b []float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("cannot pair %d runs with %d", len(a), len(b))
	}
	out := make([]float64, len(a))
	for i := range a {
		if b[i] == 0 {
			return nil, fmt.Errorf("run %d: divisor is zero", i+1)
		}
		out[i] = a[i] / b[i]
	}
	return out, nil
}
