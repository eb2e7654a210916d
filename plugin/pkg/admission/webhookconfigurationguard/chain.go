package webhookconfigurationguard

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// resourceKey is one resource (or subresource) of the chain analysis. A "*" in a field is a
// placeholder for a name no rule spells out ("any other resource of this group"): only rules
// with a wildcard there match it, exactly as a request for such a resource would.
type resourceKey struct{ group, resource, sub string }

func (k resourceKey) String() string {
	s := k.resource
	if k.sub != "" {
		s += "/" + k.sub
	}
	if k.group != "" {
		s += "." + k.group
	}
	return s
}

// representativeResources stand for what wildcard rules reach even when no rule names them:
// the resources every cluster writes all the time.
var representativeResources = []resourceKey{
	{"", "pods", ""}, {"", "pods", "status"}, {"", "pods", "exec"}, {"", "pods", "binding"},
	{"", "configmaps", ""}, {"", "secrets", ""}, {"", "services", ""}, {"", "endpoints", ""},
	{"", "serviceaccounts", ""}, {"", "namespaces", ""}, {"", "nodes", ""}, {"", "nodes", "status"},
	{"", "events", ""}, {"", "persistentvolumeclaims", ""},
	{"apps", "deployments", ""}, {"apps", "deployments", "scale"}, {"apps", "replicasets", ""},
	{"apps", "statefulsets", ""}, {"apps", "daemonsets", ""},
	{"batch", "jobs", ""}, {"batch", "cronjobs", ""},
	{"coordination.k8s.io", "leases", ""}, {"discovery.k8s.io", "endpointslices", ""},
	{"networking.k8s.io", "ingresses", ""}, {"rbac.authorization.k8s.io", "rolebindings", ""},
}

// resourceUniverse is the set of resources the chain analysis evaluates: every
// group × resource[/subresource] each rule names (its own cross product, wildcards kept as
// placeholders) plus extra (the representative set).
func resourceUniverse(hooks []*hook, extra []resourceKey) []resourceKey {
	seen := make(map[resourceKey]struct{}, len(extra)+2*len(hooks))
	out := make([]resourceKey, 0, len(extra)+2*len(hooks))
	add := func(k resourceKey) {
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	for _, k := range extra {
		add(k)
	}
	for _, h := range hooks {
		for j := range h.rules {
			r := &h.rules[j]
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					name, sub := splitResource(res)
					add(resourceKey{g, name, sub})
				}
			}
		}
	}
	return out
}

// chainResult is a resource's worst case over the operations.
type chainResult struct {
	key resourceKey
	op  admissionregistrationv1.OperationType
	// worst is the serial mutating time plus the longest validating timeout, in seconds.
	worst int32
	// mutating are the mutating webhooks on the path; validating is the longest validating
	// one (nil when none matches).
	mutating   []*hook
	validating *hook
}

// hookMatches reports whether a rule of h matches key for op. Scope is not known for
// resources in general and selectors depend on the object: both are left out, the worst
// case (some request in some namespace reaches every matching webhook).
func hookMatches(h *hook, k resourceKey, op admissionregistrationv1.OperationType) bool {
	for j := range h.rules {
		if ruleMatches(&h.rules[j], k.group, k.resource, k.sub, op) {
			return true
		}
	}
	return false
}

// analyzeChain returns, for each resource of universe, its worst case over the operations.
func analyzeChain(hooks []*hook, universe []resourceKey) []chainResult {
	out := make([]chainResult, 0, len(universe))
	var mutating []*hook
	for _, k := range universe {
		best := chainResult{key: k}
		for _, op := range allOperations {
			mutating = mutating[:0]
			var sum, vmax int32
			var vhook *hook
			for _, h := range hooks {
				if !hookMatches(h, k, op) {
					continue
				}
				if h.mutating {
					sum += h.cost()
					mutating = append(mutating, h)
				} else if vhook == nil || h.timeout > vmax {
					vmax, vhook = h.timeout, h
				}
			}
			if total := sum + vmax; total > best.worst {
				best = chainResult{key: k, op: op, worst: total, mutating: append([]*hook(nil), mutating...), validating: vhook}
			}
		}
		out = append(out, best)
	}
	return out
}

// checkChainOf reports the resources whose worst case exceeds the budget and on whose path
// one of written's webhooks is: a write is answerable only for chains it takes part in. Each
// finding is attributed to the first of written's webhooks on that path.
func checkChainOf(all, written []*hook, budget int32, out []finding) []finding {
	// Only the resources the written webhooks reach can yield a finding: analyze those.
	var universe []resourceKey
	for _, k := range resourceUniverse(all, representativeResources) {
		for _, h := range written {
			if hookMatchesAnyOp(h, k) {
				universe = append(universe, k)
				break
			}
		}
	}
	for _, res := range analyzeChain(all, universe) {
		if res.worst <= budget {
			continue
		}
		names := make([]string, 0, len(res.mutating)+1)
		for _, h := range res.mutating {
			n := fmt.Sprintf("%s %s %ds", mutatingKind, h, h.timeout)
			if h.reinvoke {
				n += "×2 (reinvocation)"
			}
			names = append(names, n)
		}
		if v := res.validating; v != nil {
			names = append(names, fmt.Sprintf("%s %s %ds (longest validating)", validatingKind, v, v.timeout))
		}
		// The written webhook to blame: one that lengthens this path. A validating one
		// shorter than the longest does not: the chain was over budget without it.
		var own *hook
		for _, h := range written {
			if hookMatches(h, res.key, res.op) && (h.mutating || (res.validating != nil && h.timeout == res.validating.timeout)) {
				own = h
				break
			}
		}
		if own == nil {
			continue
		}
		sort.Strings(names[:len(res.mutating)])
		out = append(out, finding{checkChain, own, fmt.Sprintf("webhooks[%d]", own.index),
			fmt.Sprintf("%s %s can spend %d s in webhooks, over the %d s request budget: %s",
				res.op, res.key, res.worst, budget, strings.Join(names, ", "))})
	}
	return out
}

func hookMatchesAnyOp(h *hook, k resourceKey) bool {
	for j := range h.rules {
		if ruleMatchesAnyOp(&h.rules[j], k.group, k.resource, k.sub) {
			return true
		}
	}
	return false
}

func isWritten(h *hook, written []*hook) bool {
	for _, w := range written {
		if w == h {
			return true
		}
	}
	return false
}
