package initialresources

import (
	"math"
	"math/big"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// limitWindows are the requests the namespace's LimitRanges let the plugin set, so that
// LimitRanger, which runs after it, admits every pod it would have admitted without it.
//
// The plugin sets a request only for a resource a container sets neither request nor limit
// for. LimitRanger then gives that container a limit from a Container item's default, and
// validates, per LimitRange and item:
//
//   - a Container item's min: the request at least min (the limit is LimitRanger's own);
//   - its max: the request at most max;
//   - its maxLimitRequestRatio: a non-zero request, and limit/request at most the ratio:
//     the request at least limit/ratio;
//   - the pod's validation: the request at most the limit;
//   - a Pod item's max: the containers' requests together at most max.
//
// Which default limit a container gets, when several LimitRanges give one, depends on the
// order LimitRanger reads them in, so every one counts. A window with nothing in it sets
// nothing: the container is left to LimitRanger's defaults, as without the plugin.
type limitWindows struct {
	windows map[api.ResourceName]window
	// podMax is the least Pod item max of each resource.
	podMax map[api.ResourceName]resource.Quantity
	// defaultRequests are the Container items' default requests of each resource: what
	// LimitRanger may give a container that has no request.
	defaultRequests map[api.ResourceName][]resource.Quantity
}

// window is [lo, hi] in milli-units (millicores; thousandths of a byte); hi < 0 for none.
type window struct {
	lo, hi int64
}

// maxFitted is the largest quantity fitted in milli-units: larger ones are not set.
const maxFitted = math.MaxInt64 / 1000 // resource.MaxMilliValue

func newLimitWindows(ranges []*corev1.LimitRange) *limitWindows {
	w := &limitWindows{windows: map[api.ResourceName]window{}, podMax: map[api.ResourceName]resource.Quantity{},
		defaultRequests: map[api.ResourceName][]resource.Quantity{}}
	for _, res := range estimatedResources {
		// Never zero: at least a millicore, at least a byte.
		lo := int64(1)
		if res == api.ResourceMemory {
			lo = 1000
		}
		win := window{lo: lo, hi: -1}
		name := corev1.ResourceName(res)
		lower := func(q resource.Quantity) {
			if m := milli(q); win.hi < 0 || m < win.hi {
				win.hi = m
			}
		}
		var limits, ratios []resource.Quantity
		for _, lr := range ranges {
			for _, item := range lr.Spec.Limits {
				switch item.Type {
				case corev1.LimitTypeContainer:
					if q, ok := item.Min[name]; ok {
						win.lo = max(win.lo, milli(q))
					}
					if q, ok := item.Max[name]; ok {
						lower(q)
					}
					if q, ok := item.Default[name]; ok {
						lower(q)
						limits = append(limits, q)
					}
					if q, ok := item.MaxLimitRequestRatio[name]; ok {
						ratios = append(ratios, q)
					}
					if q, ok := item.DefaultRequest[name]; ok {
						w.defaultRequests[res] = append(w.defaultRequests[res], q)
					}
				case corev1.LimitTypePod:
					if q, ok := item.Max[name]; ok {
						if cur, seen := w.podMax[res]; !seen || q.Cmp(cur) < 0 {
							w.podMax[res] = q.DeepCopy()
						}
					}
				}
			}
		}
		for _, limit := range limits {
			for _, ratio := range ratios {
				win.lo = max(win.lo, leastRequest(milli(limit), milli(ratio)))
			}
		}
		w.windows[res] = win
	}
	return w
}

// milli is q in milli-units, saturated at maxFitted.
func milli(q resource.Quantity) int64 {
	if q.Cmp(*resource.NewQuantity(maxFitted/1000, resource.DecimalSI)) >= 0 {
		return maxFitted
	}
	return q.MilliValue()
}

// leastRequest is the least request (milli-units) whose ratio to limit is at most ratio:
// ⌈limit/ratio⌉, then checked as a ratio in floating point is compared, so that rounding
// there cannot refuse it.
func leastRequest(limit, ratio int64) int64 {
	if ratio <= 0 {
		return maxFitted + 1 // no request satisfies it: an empty window
	}
	l, r := big.NewInt(limit), big.NewInt(ratio)
	q, m := new(big.Int).QuoRem(new(big.Int).Mul(l, big.NewInt(1000)), r, new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > maxFitted {
		return maxFitted + 1
	}
	least := q.Int64()
	for least <= maxFitted && float64(limit)/float64(least)*1000 > float64(ratio) {
		least++
	}
	return least
}

// fit returns q moved into res's window, or false when the window is empty or q cannot be
// set within it.
func (w *limitWindows) fit(res api.ResourceName, q resource.Quantity) (resource.Quantity, bool) {
	win, ok := w.windows[res]
	if !ok {
		return q, true
	}
	if win.hi >= 0 && win.lo > win.hi {
		return q, false
	}
	m := milli(q)
	if m >= maxFitted {
		return q, false
	}
	m = max(m, win.lo)
	if win.hi >= 0 {
		m = min(m, win.hi)
	}
	var out resource.Quantity
	if res == api.ResourceCPU {
		out = *resource.NewMilliQuantity(m, resource.DecimalSI)
	} else {
		// Whole bytes, rounded up.
		out = *resource.NewQuantity((m+999)/1000, resource.DecimalSI)
	}
	if win.hi >= 0 && milli(out) > win.hi {
		return q, false
	}
	if milli(out) < win.lo || out.Sign() <= 0 {
		return q, false
	}
	if milli(out) == milli(q) {
		return q, true // unchanged: keep the source's own spelling
	}
	return out, true
}

// keepPodMax undoes the sets of any resource whose Pod item max the pod's containers'
// requests together could exceed: each container's request, or for one without, the
// largest default request LimitRanger may give it (all containers summed, init ones
// included: at least what LimitRanger adds up). Without the plugin's requests, the pod is
// what LimitRanger would have seen.
func (w *limitWindows) keepPodMax(pod *api.Pod, sets []set) []set {
	for res, limit := range w.podMax {
		total := new(big.Int)
		add := func(q resource.Quantity) { total.Add(total, big.NewInt(milli(q))) }
		for _, c := range allContainers(pod) {
			if q, ok := c.Resources.Requests[res]; ok {
				add(q)
				continue
			}
			var most *resource.Quantity
			for i, d := range w.defaultRequests[res] {
				if most == nil || d.Cmp(*most) > 0 {
					most = &w.defaultRequests[res][i]
				}
			}
			if most != nil {
				add(*most)
			}
		}
		if total.Cmp(big.NewInt(milli(limit))) <= 0 {
			continue
		}
		for i := range sets {
			s := &sets[i]
			if j := indexOf(s.resources, res); j >= 0 {
				delete(s.container.Resources.Requests, res)
				if len(s.container.Resources.Requests) == 0 {
					s.container.Resources.Requests = nil
				}
				s.resources = append(s.resources[:j:j], s.resources[j+1:]...)
			}
		}
	}
	kept := sets[:0]
	for _, s := range sets {
		if len(s.resources) > 0 {
			kept = append(kept, s)
		}
	}
	return kept
}

func indexOf(list []api.ResourceName, res api.ResourceName) int {
	for i, r := range list {
		if r == res {
			return i
		}
	}
	return -1
}

func allContainers(pod *api.Pod) []*api.Container {
	out := make([]*api.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}
