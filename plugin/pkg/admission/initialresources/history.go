package initialresources

import (
	"context"
	"math"
	"slices"
	"time"

	api "k8s.io/kubernetes/pkg/apis/core"
)

// usageHistory is a history of containers' usage (1.10's dataSource).
type usageHistory interface {
	// Samples returns the usage samples of resource by containers running img (exact: this
	// very image; otherwise any tag or digest of its repository) in namespace ("" for any)
	// over the window that ends now: millicores for cpu, bytes for memory.
	Samples(ctx context.Context, resource api.ResourceName, img image, exact bool, namespace string, window time.Duration) ([]float64, error)
}

// tiers is how an estimate widens its history until it has enough samples, as 1.10 did.
type tiers struct {
	percentile    int32
	threshold     int
	short, long   time.Duration
	namespaceOnly bool
}

// estimate returns the percentile of the first history with at least threshold samples,
// trying in 1.10's order: this image in the namespace over the short window, then the long
// one; then, unless namespaceOnly, this image anywhere over the short and the long window,
// and its repository anywhere over the long one; with namespaceOnly, its repository in the
// namespace over the long window. As in 1.10, when no history has enough, the last one
// tried decides if it has any sample. ok is false when there is no estimate.
func (t tiers) estimate(ctx context.Context, h usageHistory, resource api.ResourceName, img image, namespace string) (value int64, ok bool, err error) {
	type query struct {
		exact     bool
		namespace string
		window    time.Duration
	}
	queries := []query{{true, namespace, t.short}, {true, namespace, t.long}}
	if t.namespaceOnly {
		queries = append(queries, query{false, namespace, t.long})
	} else {
		queries = append(queries, query{true, "", t.short}, query{true, "", t.long}, query{false, "", t.long})
	}
	var samples []float64
	for _, q := range queries {
		if samples, err = h.Samples(ctx, resource, img, q.exact, q.namespace, q.window); err != nil {
			return 0, false, err
		}
		if len(samples) >= t.threshold {
			break
		}
	}
	if len(samples) == 0 {
		return 0, false, nil
	}
	return percentile(samples, t.percentile), true, nil
}

// percentile is the nearest-rank percentile of samples, rounded up to a whole millicore or
// byte: the smallest sample that p percent of the samples do not exceed. A sample within a
// millionth of a whole number is that number (a rate's floating-point error is not a
// millicore more).
func percentile(samples []float64, p int32) int64 {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	rank := int(math.Ceil(float64(p) / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return int64(math.Ceil(sorted[rank-1] - 1e-6))
}
