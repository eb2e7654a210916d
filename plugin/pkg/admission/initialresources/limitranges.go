package initialresources

import (
	"math"
	"math/big"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
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
	// ranges are the namespace's LimitRanges, for the final check (keepAdmissible).
	ranges  []*corev1.LimitRange
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
	w := &limitWindows{ranges: ranges, windows: map[api.ResourceName]window{}, podMax: map[api.ResourceName]resource.Quantity{},
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

// keepAdmissible undoes the sets of a resource — or, when no single resource's will do,
// every set — when upstream's LimitRanger, run on a copy of the pod (defaults of every
// LimitRange, then validation by every one, as its two phases do), would refuse the pod
// with the estimates and admit it without them. The windows and keepPodMax choose
// estimates LimitRanger admits; this check is the guarantee, for the rules they do not
// model (a Pod item's min and maxLimitRequestRatio among them).
func (w *limitWindows) keepAdmissible(pod *api.Pod, sets []set) []set {
	if len(sets) == 0 || len(w.ranges) == 0 || limitRangerAdmits(w.ranges, pod) {
		return sets
	}
	if !limitRangerAdmits(w.ranges, withoutSets(pod, sets, nil)) {
		return sets // refused either way: the estimates change no verdict
	}
	for _, res := range estimatedResources {
		only := []api.ResourceName{res}
		if limitRangerAdmits(w.ranges, withoutSets(pod, sets, only)) {
			return undo(sets, only)
		}
	}
	return undo(sets, nil)
}

// withoutSets is a copy of pod without the requests sets made of resources (nil: all).
func withoutSets(pod *api.Pod, sets []set, resources []api.ResourceName) *api.Pod {
	out := pod.DeepCopy()
	all := allContainers(out)
	for _, s := range sets {
		for _, res := range s.resources {
			if resources == nil || slices.Contains(resources, res) {
				delete(all[s.index].Resources.Requests, res)
			}
		}
	}
	return out
}

// undo removes the requests sets made of resources (nil: all) from the pod, and returns
// the sets left.
func undo(sets []set, resources []api.ResourceName) []set {
	kept := sets[:0]
	for _, s := range sets {
		s.resources = slices.DeleteFunc(s.resources, func(res api.ResourceName) bool {
			if resources != nil && !slices.Contains(resources, res) {
				return false
			}
			delete(s.container.Resources.Requests, res)
			return true
		})
		if len(s.container.Resources.Requests) == 0 {
			s.container.Resources.Requests = nil
		}
		if len(s.resources) > 0 {
			kept = append(kept, s)
		}
	}
	return kept
}

// limitRangerAdmits runs upstream's LimitRanger functions on a copy of pod, then the pod
// validation's rule they lead to: a request at most its limit.
func limitRangerAdmits(ranges []*corev1.LimitRange, pod *api.Pod) bool {
	pod = pod.DeepCopy()
	for _, lr := range ranges {
		if err := limitranger.PodMutateLimitFunc(lr, pod); err != nil {
			return false
		}
	}
	for _, lr := range ranges {
		if err := limitranger.PodValidateLimitFunc(lr, pod); err != nil {
			return false
		}
	}
	for _, c := range allContainers(pod) {
		for res, request := range c.Resources.Requests {
			if limit, ok := c.Resources.Limits[res]; ok && request.Cmp(limit) > 0 {
				return false
			}
		}
	}
	return true
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
