package webhookconfigurationguard

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const (
	mutatingKind   = "MutatingWebhookConfiguration"
	validatingKind = "ValidatingWebhookConfiguration"

	// defaultTimeoutSeconds is what the API defaults an unset timeoutSeconds to.
	defaultTimeoutSeconds int32 = 10

	namespaceNameLabel = "kubernetes.io/metadata.name"
	kubeSystem         = "kube-system"
	kubeNodeLease      = "kube-node-lease"
)

// hook is one webhook of a configuration, mutating or validating, with what the checks need.
type hook struct {
	kind, config string
	index        int
	name         string
	mutating     bool
	rules        []admissionregistrationv1.RuleWithOperations
	nsSelector   labels.Selector // nil: matches every namespace
	objSelector  labels.Selector // nil: matches every object
	conditions   []admissionregistrationv1.MatchCondition
	failClosed   bool
	timeout      int32
	reinvoke     bool
	service      *admissionregistrationv1.ServiceReference
}

// cost is the hook's worst-case share of the serial mutating time: its timeout, twice when
// it may be reinvoked.
func (h *hook) cost() int32 {
	if h.reinvoke {
		return 2 * h.timeout
	}
	return h.timeout
}

func (h *hook) String() string { return fmt.Sprintf("%s/%s", h.config, h.name) }

func selectorOf(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		// API validation refuses such a selector; treat it as matching everything, the
		// worst case.
		return nil
	}
	return sel
}

func timeoutOf(t *int32) int32 {
	if t == nil {
		return defaultTimeoutSeconds
	}
	return *t
}

// failClosed: failurePolicy defaults to Fail in admissionregistration/v1.
func failClosed(p *admissionregistrationv1.FailurePolicyType) bool {
	return p == nil || *p == admissionregistrationv1.Fail
}

func mutatingHooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []*hook {
	out := make([]*hook, 0, len(c.Webhooks))
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		out = append(out, &hook{
			kind: mutatingKind, config: c.Name, index: i, name: w.Name, mutating: true,
			rules: w.Rules, nsSelector: selectorOf(w.NamespaceSelector), objSelector: selectorOf(w.ObjectSelector),
			conditions: w.MatchConditions, failClosed: failClosed(w.FailurePolicy), timeout: timeoutOf(w.TimeoutSeconds),
			reinvoke: w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy,
			service:  w.ClientConfig.Service,
		})
	}
	return out
}

func validatingHooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []*hook {
	out := make([]*hook, 0, len(c.Webhooks))
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		out = append(out, &hook{
			kind: validatingKind, config: c.Name, index: i, name: w.Name,
			rules: w.Rules, nsSelector: selectorOf(w.NamespaceSelector), objSelector: selectorOf(w.ObjectSelector),
			conditions: w.MatchConditions, failClosed: failClosed(w.FailurePolicy), timeout: timeoutOf(w.TimeoutSeconds),
			service: w.ClientConfig.Service,
		})
	}
	return out
}

// finding is one departure from the good practices.
type finding struct {
	check checkID
	// hook is the webhook at fault; path is the field, relative to the configuration.
	hook *hook
	path string
	msg  string
}

func (f finding) String() string {
	return fmt.Sprintf("%s %q: webhook %q (%s): %s [%s]", f.hook.kind, f.hook.config, f.hook.name, f.path, f.msg, f.check)
}

func rulePath(h *hook, j int) string { return fmt.Sprintf("webhooks[%d].rules[%d]", h.index, j) }

// --- rule matching, with upstream's semantics (predicates/rules), versions aside ---

// anyOf reports whether items holds "*" or want. A wildcard placeholder ("*") as want
// matches only a "*" item: it stands for a name no rule spells out.
func anyOf(items []string, want string) bool {
	for _, it := range items {
		if it == "*" || it == want {
			return true
		}
	}
	return false
}

func opMatches(ops []admissionregistrationv1.OperationType, op admissionregistrationv1.OperationType) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || o == op {
			return true
		}
	}
	return false
}

func splitResource(r string) (string, string) {
	if i := strings.IndexByte(r, '/'); i >= 0 {
		return r[:i], r[i+1:]
	}
	return r, ""
}

func resourceMatches(resources []string, resource, sub string) bool {
	for _, r := range resources {
		res, s := splitResource(r)
		if (res == "*" || res == resource) && (s == "*" || s == sub) {
			return true
		}
	}
	return false
}

// scopeReaches reports whether the rule's scope includes namespaced (true) or cluster-scoped
// (false) resources.
func scopeReaches(r *admissionregistrationv1.RuleWithOperations, namespaced bool) bool {
	if r.Scope == nil || *r.Scope == admissionregistrationv1.AllScopes {
		return true
	}
	if namespaced {
		return *r.Scope == admissionregistrationv1.NamespacedScope
	}
	return *r.Scope == admissionregistrationv1.ClusterScope
}

// ruleMatches ignores apiVersions: with the default matchPolicy (Equivalent) a rule for one
// version of a resource intercepts requests made through every version.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, group, resource, sub string, op admissionregistrationv1.OperationType) bool {
	return opMatches(r.Operations, op) && anyOf(r.APIGroups, group) && resourceMatches(r.Resources, resource, sub)
}

func ruleMatchesAnyOp(r *admissionregistrationv1.RuleWithOperations, group, resource, sub string) bool {
	return len(r.Operations) > 0 && anyOf(r.APIGroups, group) && resourceMatches(r.Resources, resource, sub)
}

// reachesNamespace reports whether the webhook's namespaceSelector lets requests in ns
// through: selectors see the namespace's automatic kubernetes.io/metadata.name label.
func (h *hook) reachesNamespace(ns string) bool {
	return h.nsSelector == nil || h.nsSelector.Matches(labels.Set{namespaceNameLabel: ns})
}

// optsIn reports whether the objectSelector requires a label: objects (such as system ones)
// that lack the webhook's labels are then left alone.
func (h *hook) optsIn() bool {
	return h.objSelector != nil && !h.objSelector.Matches(labels.Set{})
}

// conditionNames reports whether a matchCondition names ns: the webhook's author filters on
// it (e.g. request.namespace != "kube-system"). A heuristic: CEL is not evaluated.
func (h *hook) conditionNames(ns string) bool {
	for _, c := range h.conditions {
		if strings.Contains(c.Expression, ns) {
			return true
		}
	}
	return false
}

func (h *hook) excludesSystemNamespace(ns string) bool {
	return !h.reachesNamespace(ns) || h.optsIn() || h.conditionNames(ns)
}

// checkSystemNamespacesOf: "Avoid matching objects in the kube-system namespace" and
// "Don't mutate node leases" (Limit the scope of each webhook).
func checkSystemNamespacesOf(h *hook, out []finding) []finding {
	for j := range h.rules {
		r := &h.rules[j]
		if len(r.Operations) == 0 || len(r.Resources) == 0 || len(r.APIGroups) == 0 || !scopeReaches(r, true) {
			continue
		}
		if !h.excludesSystemNamespace(kubeSystem) {
			out = append(out, finding{checkSystemNamespaces, h, rulePath(h, j),
				"reaches objects in kube-system; exclude it with a namespaceSelector (kubernetes.io/metadata.name NotIn [kube-system]), an objectSelector or a matchCondition"})
		}
		if ruleMatchesAnyOp(r, "coordination.k8s.io", "leases", "") && !h.excludesSystemNamespace(kubeNodeLease) {
			out = append(out, finding{checkSystemNamespaces, h, rulePath(h, j),
				"reaches node Leases in kube-node-lease (intercepting them can fail node heartbeats and upgrades); exclude that namespace"})
		}
	}
	return out
}

type groupResource struct{ group, resource string }

// reviewResources are the virtual authentication and authorization resources: read-only,
// never stored, never worth intercepting.
var reviewResources = []struct {
	groupResource
	namespaced bool
}{
	{groupResource{"authentication.k8s.io", "tokenreviews"}, false},
	{groupResource{"authorization.k8s.io", "subjectaccessreviews"}, false},
	{groupResource{"authorization.k8s.io", "localsubjectaccessreviews"}, true},
	{groupResource{"authorization.k8s.io", "selfsubjectaccessreviews"}, false},
	{groupResource{"authorization.k8s.io", "selfsubjectrulesreviews"}, false},
	{groupResource{"authentication.k8s.io", "selfsubjectreviews"}, false},
}

// checkReviewResourcesOf: "Don't match TokenReview, SubjectAccessReview, or other virtual
// authentication and authorization resources" (Limit the scope of each webhook).
func checkReviewResourcesOf(h *hook, out []finding) []finding {
	for j := range h.rules {
		r := &h.rules[j]
		var reached []string
		for _, rr := range reviewResources {
			if scopeReaches(r, rr.namespaced) && ruleMatches(r, rr.group, rr.resource, "", admissionregistrationv1.Create) {
				reached = append(reached, rr.resource)
			}
		}
		if len(reached) > 0 {
			out = append(out, finding{checkReviewResources, h, rulePath(h, j),
				"reaches " + strings.Join(reached, ", ") + ": read-only requests, never worth intercepting; name the resources the webhook needs"})
		}
	}
	return out
}

// checkSelfInterceptOf: "Avoid self-mutations" and "Avoid dependency loops": a fail-closed
// webhook served from a namespace whose pod creations it intercepts refuses its own pods
// while it is down, so it can never come back.
func checkSelfInterceptOf(h *hook, out []finding) []finding {
	if !h.failClosed || h.service == nil {
		return out
	}
	ns := h.service.Namespace
	if !h.reachesNamespace(ns) || h.conditionNames(ns) {
		return out
	}
	for j := range h.rules {
		r := &h.rules[j]
		if scopeReaches(r, true) && ruleMatches(r, "", "pods", "", admissionregistrationv1.Create) {
			return append(out, finding{checkSelfIntercept, h, fmt.Sprintf("webhooks[%d].clientConfig.service", h.index),
				fmt.Sprintf("failurePolicy Fail and served from namespace %q, whose pod creations %s intercepts: once down it can never restart; exclude %q with a namespaceSelector or set failurePolicy Ignore",
					ns, rulePath(h, j), ns)})
		}
	}
	return out
}

// checkTimeoutOf: "Set a small timeout value".
func checkTimeoutOf(h *hook, threshold int32, out []finding) []finding {
	if h.timeout <= threshold {
		return out
	}
	return append(out, finding{checkTimeout, h, fmt.Sprintf("webhooks[%d].timeoutSeconds", h.index),
		fmt.Sprintf("timeout %d s exceeds %d s (unset means 10 s); webhooks should answer in milliseconds", h.timeout, threshold)})
}

var allOperations = []admissionregistrationv1.OperationType{
	admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect,
}

// checkCatchAllOf: "Limit the scope of each webhook" and "Fail open": a fail-closed webhook
// on every request takes the whole API down with it.
func checkCatchAllOf(h *hook, out []finding) []finding {
	if !h.failClosed {
		return out
	}
	for j := range h.rules {
		r := &h.rules[j]
		if !slices.Contains(r.APIGroups, "*") || !(slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "*/*")) {
			continue
		}
		every := true
		for _, op := range allOperations {
			every = every && opMatches(r.Operations, op)
		}
		if every {
			out = append(out, finding{checkCatchAll, h, rulePath(h, j),
				"matches every group, resource and operation with failurePolicy Fail: when the webhook is down the whole API refuses writes; narrow the rule or set failurePolicy Ignore"})
		}
	}
	return out
}
