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

// tierQuery is one history a tier reads.
type tierQuery struct {
	exact     bool
	namespace string // "" for any
	window    time.Duration
}

// namespaceTiers are the histories of the pod's namespace, in 1.10's order: this image
// over the short window, then the long one; with namespaceOnly, then its repository over
// the long window.
func (t tiers) namespaceTiers(namespace string) []tierQuery {
	q := []tierQuery{{true, namespace, t.short}, {true, namespace, t.long}}
	if t.namespaceOnly {
		q = append(q, tierQuery{false, namespace, t.long})
	}
	return q
}

// clusterTiers are the histories of any namespace, tried (unless namespaceOnly) when the
// namespace's have too few samples: this image over the short and the long window, then
// its repository over the long one. They do not depend on the namespace, so the plugin
// computes them once per image, not once per image and namespace.
func (t tiers) clusterTiers() []tierQuery {
	return []tierQuery{{true, "", t.short}, {true, "", t.long}, {false, "", t.long}}
}

// first returns the percentile of the first of queries with at least threshold samples
// (enough); when none has enough, the last one's, if it has any sample (1.10's rule that
// the last history tried decides). ok is false when there is no estimate.
func (t tiers) first(ctx context.Context, h usageHistory, resource api.ResourceName, img image, queries []tierQuery) (value int64, ok, enough bool, err error) {
	var samples []float64
	for _, q := range queries {
		if samples, err = h.Samples(ctx, resource, img, q.exact, q.namespace, q.window); err != nil {
			return 0, false, false, err
		}
		if len(samples) >= t.threshold {
			return percentile(samples, t.percentile), true, true, nil
		}
	}
	if len(samples) == 0 {
		return 0, false, false, nil
	}
	return percentile(samples, t.percentile), true, false, nil
}

// estimate returns the percentile of the first history with at least threshold samples,
// trying the namespace's tiers, then (unless namespaceOnly) the cluster's; as in 1.10, when
// no history has enough, the last one tried decides if it has any sample. ok is false when
// there is no estimate. (The plugin composes the same two steps through its caches.)
func (t tiers) estimate(ctx context.Context, h usageHistory, resource api.ResourceName, img image, namespace string) (value int64, ok bool, err error) {
	value, ok, enough, err := t.first(ctx, h, resource, img, t.namespaceTiers(namespace))
	if err != nil || enough || t.namespaceOnly {
		return value, ok, err
	}
	value, ok, _, err = t.first(ctx, h, resource, img, t.clusterTiers())
	return value, ok, err
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
