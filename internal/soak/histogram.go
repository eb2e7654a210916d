package soak

import (
	"math"
	"time"
)

// Histogram counts latencies in logarithmic buckets, each 1% wider than the last, from 1µs
// to about 20 minutes: memory does not grow with the number of creates, and a percentile is
// within 1% of the latency observed (the largest is kept exactly).
type Histogram struct {
	counts [histogramBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

const (
	histogramBase    = time.Microsecond
	histogramGrowth  = 1.01
	histogramBuckets = 2100 // 1µs × 1.01^2100 ≈ 20 min
)

// bucketOf returns the bucket whose upper bound is the smallest at least d.
func bucketOf(d time.Duration) int {
	if d <= histogramBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(histogramBase)) / math.Log(histogramGrowth)))
	return min(max(i, 0), histogramBuckets-1)
}

// bucketUpper is the largest latency bucket i holds.
func bucketUpper(i int) time.Duration {
	return time.Duration(float64(histogramBase) * math.Pow(histogramGrowth, float64(i)))
}

// Record adds one latency; a negative one counts as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(d)]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// Merge adds other's counts to h.
func (h *Histogram) Merge(other *Histogram) {
	for i, c := range other.counts {
		h.counts[i] += c
	}
	h.n += other.n
	h.sum += other.sum
	h.max = max(h.max, other.max)
}

// Count is the number of latencies recorded.
func (h *Histogram) Count() int { return int(h.n) }

// Max is the largest latency recorded, exactly.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average latency, or 0 with none recorded.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) as the upper bound of
// the bucket holding it, never above the largest latency recorded; 0 with none recorded.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 || !(p > 0) {
		return 0
	}
	rank := uint64(math.Ceil(min(p, 100) / 100 * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == histogramBuckets-1 { // the last bucket also holds what is beyond it
				return h.max
			}
			return min(bucketUpper(i), h.max)
		}
	}
	return h.max
}
