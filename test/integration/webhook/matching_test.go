package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// marker names one request by what a webhook rule matches on.
type marker struct {
	operation   admissionv1.Operation
	resource    string
	subresource string
}

func (m marker) String() string {
	if m.subresource == "" {
		return fmt.Sprintf("%s %s", m.operation, m.resource)
	}
	return fmt.Sprintf("%s %s/%s", m.operation, m.resource, m.subresource)
}

// markersOf returns what path was called for, counting only requests about names.
func markersOf(s *webhookServer, path string, names ...string) []string {
	seen := sets.New[string]()
	for _, c := range s.callsTo(path) {
		if slices.Contains(names, c.Request.Name) {
			seen.Insert(marker{c.Request.Operation, c.Request.Resource.Resource, c.Request.SubResource}.String())
		}
	}
	return sets.List(seen)
}

// clusterScopedIsolation is a match condition that keeps a webhook whose rules reach
// cluster-scoped resources to the case's own objects: the namespaceSelector does not apply
// to those, and an objectSelector would also exclude CONNECT requests, whose object (the
// connect options) has no labels.
func (k *suiteCase) clusterScopedIsolation() []admissionregistrationv1.MatchCondition {
	labelled := func(v string) string {
		return fmt.Sprintf("(%[1]s != null && has(%[1]s.metadata.labels) && %[2]q in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]q] == %[3]q)", v, caseLabel, k.id)
	}
	return []admissionregistrationv1.MatchCondition{{
		Name:       "own-objects",
		Expression: fmt.Sprintf("request.namespace != '' || %s || %s", labelled("object"), labelled("oldObject")),
	}}
}

// testRules: one validating webhook per rule shape, then one request of each kind; every
// webhook must have been called for exactly the requests its rule names.
func testRules(t *testing.T, e *env) {
	k := newCase(e.main, "rules")
	ns := k.namespace(t, nil)
	const cmName, podName = "rules-target", "rules-target"
	clusterRoleName := "rules-target-" + ns

	all := []string{"*"}
	core := []string{""}
	v1 := []string{"v1"}
	scoped := func(r admissionregistrationv1.RuleWithOperations, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		r.Scope = &scope
		return r
	}
	var (
		cmCreate  = marker{admissionv1.Create, "configmaps", ""}.String()
		cmUpdate  = marker{admissionv1.Update, "configmaps", ""}.String()
		cmDelete  = marker{admissionv1.Delete, "configmaps", ""}.String()
		podCreate = marker{admissionv1.Create, "pods", ""}.String()
		podStatus = marker{admissionv1.Update, "pods", "status"}.String()
		podExec   = marker{admissionv1.Connect, "pods", "exec"}.String()
		crCreate  = marker{admissionv1.Create, "clusterroles", ""}.String()
	)
	// Every webhook has the default matchPolicy, Equivalent: a request through one version
	// also matches a rule naming another version the server serves the resource at.
	cases := []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		want []string
	}{
		{"op-create", configMapRule(opCreate), []string{cmCreate}},
		{"op-update", configMapRule(opUpdate), []string{cmUpdate}},
		{"op-delete", configMapRule(opDelete), []string{cmDelete}},
		{"op-connect", rule(core, v1, []string{"pods/exec"}, opConnect), []string{podExec}},
		{"op-any", configMapRule(opAll), []string{cmCreate, cmUpdate, cmDelete}},
		{"resources-any", rule(all, all, all, opAll), []string{cmCreate, cmUpdate, cmDelete, podCreate, crCreate}},
		{"resources-and-subresources-any", rule(all, all, []string{"*/*"}, opAll),
			[]string{cmCreate, cmUpdate, cmDelete, podCreate, podStatus, podExec, crCreate}},
		// "pods/*" is every subresource of pods; the matcher reads "*" as any subresource
		// including none, so it matches pods themselves too.
		{"pods-and-any-subresource", rule(core, v1, []string{"pods/*"}, opAll), []string{podCreate, podStatus, podExec}},
		{"status-of-any-resource", rule(all, all, []string{"*/status"}, opAll), []string{podStatus}},
		{"pods-status", rule(core, v1, []string{"pods/status"}, opAll), []string{podStatus}},
		{"group-rbac", rule([]string{rbacGroup}, v1, all, opAll), []string{crCreate}},
		// group-rbac's rule at a version the server does not serve (checked below), though its
		// scheme still converts ClusterRoles to it: Equivalent stands in served versions only,
		// so the ClusterRole that group-rbac sees through v1 does not reach this webhook.
		{"version-unserved", rule([]string{rbacGroup}, []string{unservedRBACVersion}, all, opAll), nil},
		{"scope-cluster", scoped(rule(all, all, all, opAll), admissionregistrationv1.ClusterScope), []string{crCreate}},
		{"scope-namespaced", scoped(rule(all, all, all, opAll), admissionregistrationv1.NamespacedScope),
			[]string{cmCreate, cmUpdate, cmDelete, podCreate}},
		{"scope-any", scoped(rule(all, all, all, opAll), admissionregistrationv1.AllScopes),
			[]string{cmCreate, cmUpdate, cmDelete, podCreate, crCreate}},
	}
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, tc := range cases {
		k.c.hooks.handle(k.path(tc.name), func(*call) *admissionv1.AdmissionResponse { return nil })
		hook := validatingHook(k.hookName(tc.name), k.c.hooks.clientConfig(k.path(tc.name)), k.selector(nil), tc.rule)
		hook.MatchConditions = k.clusterScopedIsolation()
		hooks = append(hooks, hook)
	}
	k.c.createValidating(t, validatingConfig(k.configName("rules"), hooks...))

	// One request of each kind.
	client := k.c.Client
	cm := k.mustCreateConfigMap(t, k.configMap(ns, cmName, nil))
	cm.Data["key"] = "updated"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(k.ctx(t), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UPDATE configmaps: %v", err)
	}
	pod, err := client.CoreV1().Pods(ns).Create(k.ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Labels: k.labels(nil)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("CREATE pods: %v", err)
	}
	pod.Status.Message = "status updated by the rules case"
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(k.ctx(t), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UPDATE pods/status: %v", err)
	}
	// Admission runs before the server looks for the pod's node; no node runs it, so the
	// request then fails with "does not have a host assigned".
	err = client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(podName).SubResource("exec").
		Param("container", "a").Param("stdout", "true").Param("command", "true").Do(k.ctx(t)).Error()
	if err == nil || !strings.Contains(err.Error(), "host assigned") {
		t.Fatalf("CONNECT pods/exec: want the missing-node error after admission, got %v", err)
	}
	if _, err := client.RbacV1().ClusterRoles().Create(k.ctx(t), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: clusterRoleName, Labels: k.labels(nil)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("CREATE clusterroles: %v", err)
	}
	deleteAtEnd(t, "ClusterRole "+clusterRoleName, func(ctx context.Context) error {
		return client.RbacV1().ClusterRoles().Delete(ctx, clusterRoleName, metav1.DeleteOptions{})
	})
	if err := client.CoreV1().ConfigMaps(ns).Delete(k.ctx(t), cmName, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("DELETE configmaps: %v", err)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "version-unserved" {
				wantUnserved(t, k.c, rbacGroup, unservedRBACVersion)
				wantMatchPolicy(t, k.c, k.configName("rules"), k.hookName(tc.name), admissionregistrationv1.Equivalent)
			}
			got := markersOf(k.c.hooks, k.path(tc.name), cmName, podName, clusterRoleName)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("rule %+v was called for %q, want %q", tc.rule, got, want)
			}
		})
	}
}

const (
	rbacGroup = "rbac.authorization.k8s.io"
	// unservedRBACVersion is a version of rbacGroup the server no longer serves (since
	// Kubernetes v1.22) but whose types its scheme still registers.
	unservedRBACVersion = "v1beta1"
)

// wantUnserved fails unless the server's discovery lists group without version.
func wantUnserved(t *testing.T, c *cluster, group, version string) {
	t.Helper()
	groups, err := c.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	for _, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == version {
				t.Fatalf("the server serves %s/%s; the case needs a version it does not serve", group, version)
			}
		}
		return
	}
	t.Fatalf("the server does not serve the group %s at all; the case needs it served at another version", group)
}

// wantMatchPolicy fails unless the stored validating webhook hook of configuration config
// has matchPolicy want.
func wantMatchPolicy(t *testing.T, c *cluster, config, hook string, want admissionregistrationv1.MatchPolicyType) {
	t.Helper()
	stored, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(requestContext(t), config, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ValidatingWebhookConfiguration %s back: %v", config, err)
	}
	for _, h := range stored.Webhooks {
		if h.Name == hook {
			if h.MatchPolicy == nil || *h.MatchPolicy != want {
				t.Fatalf("webhook %s has matchPolicy %v, want %s", hook, h.MatchPolicy, want)
			}
			return
		}
	}
	t.Fatalf("ValidatingWebhookConfiguration %s has no webhook %s", config, hook)
}

// testSelectorsAndConditions covers namespaceSelector, objectSelector and matchConditions.
func testSelectorsAndConditions(t *testing.T, e *env) {
	allow := func(*call) *admissionv1.AdmissionResponse { return nil }
	const tier = "tier"

	t.Run("namespaceSelector", func(t *testing.T) {
		k := newCase(e.main, "nsselector")
		gold := k.namespace(t, map[string]string{tier: "gold"})
		plain := k.namespace(t, nil)
		expr := func(op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
			s := k.selector(nil)
			s.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: tier, Operator: op, Values: values}}
			return s
		}
		cases := []struct {
			name     string
			selector *metav1.LabelSelector
			want     string // the namespace whose request the webhook sees
		}{
			{"match-labels", k.selector(map[string]string{tier: "gold"}), gold},
			{"in", expr(metav1.LabelSelectorOpIn, "gold", "silver"), gold},
			{"not-in", expr(metav1.LabelSelectorOpNotIn, "gold"), plain},
			{"exists", expr(metav1.LabelSelectorOpExists), gold},
			{"does-not-exist", expr(metav1.LabelSelectorOpDoesNotExist), plain},
		}
		var hooks []admissionregistrationv1.ValidatingWebhook
		for _, tc := range cases {
			k.c.hooks.handle(k.path(tc.name), allow)
			hooks = append(hooks, validatingHook(k.hookName(tc.name), k.c.hooks.clientConfig(k.path(tc.name)), tc.selector, configMapRule(opCreate)))
		}
		k.c.createValidating(t, validatingConfig(k.configName("namespaces"), hooks...))
		for _, ns := range []string{gold, plain} {
			k.mustCreateConfigMap(t, k.configMap(ns, "selected", nil))
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var got []string
				for _, c := range callsFor(k.c.hooks, k.path(tc.name), "selected") {
					got = append(got, c.Request.Namespace)
				}
				if !slices.Equal(got, []string{tc.want}) {
					t.Errorf("namespaceSelector %v saw requests in namespaces %q, want only %q (gold=%s, plain=%s)", tc.selector, got, tc.want, gold, plain)
				}
			})
		}
	})

	t.Run("a Namespace object is matched on its own labels", func(t *testing.T) {
		k := newCase(e.main, "nsobject")
		k.c.hooks.handle(k.path("namespace-object"), allow)
		hook := validatingHook(k.hookName("namespace-object"), k.c.hooks.clientConfig(k.path("namespace-object")),
			k.selector(map[string]string{tier: "platinum"}), rule([]string{""}, []string{"v1"}, []string{"namespaces"}, opCreate))
		k.c.createValidating(t, validatingConfig(k.configName("namespace-object"), hook))
		platinum := k.namespace(t, map[string]string{tier: "platinum"})
		plain := k.namespace(t, nil)
		var got []string
		for _, c := range k.c.hooks.callsTo(k.path("namespace-object")) {
			// Generated names are set after the request's name is taken: read the object's.
			got = append(got, c.objectMeta().Name)
		}
		if !slices.Equal(got, []string{platinum}) {
			t.Errorf("the webhook saw the creation of namespaces %q, want only %q (not %q)", got, platinum, plain)
		}
	})

	t.Run("cluster-scoped objects are unaffected by namespaceSelector", func(t *testing.T) {
		k := newCase(e.main, "clusterscoped")
		ns := k.namespace(t, nil)
		// No namespace has this label, so the selector excludes every namespaced request.
		nobody := k.selector(map[string]string{tier: "no-namespace-has-this"})
		var hooks []admissionregistrationv1.ValidatingWebhook
		for name, r := range map[string]admissionregistrationv1.RuleWithOperations{
			"cluster-scoped": rule([]string{"rbac.authorization.k8s.io"}, []string{"v1"}, []string{"clusterroles"}, opCreate),
			"namespaced":     configMapRule(opCreate),
		} {
			k.c.hooks.handle(k.path(name), allow)
			hook := validatingHook(k.hookName(name), k.c.hooks.clientConfig(k.path(name)), nobody, r)
			hook.ObjectSelector = k.selector(nil)
			hooks = append(hooks, hook)
		}
		k.c.createValidating(t, validatingConfig(k.configName("cluster-scoped"), hooks...))
		name := "selectors-" + ns
		if _, err := k.c.Client.RbacV1().ClusterRoles().Create(k.ctx(t), &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: k.labels(nil)},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ClusterRole %s: %v", name, err)
		}
		deleteAtEnd(t, "ClusterRole "+name, func(ctx context.Context) error {
			return k.c.Client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		})
		k.mustCreateConfigMap(t, k.configMap(ns, name, nil))
		if n := len(callsFor(k.c.hooks, k.path("cluster-scoped"), name)); n != 1 {
			t.Errorf("the ClusterRole webhook was called %d times, want once: namespaceSelector must not apply to cluster-scoped objects", n)
		}
		if n := len(callsFor(k.c.hooks, k.path("namespaced"), name)); n != 0 {
			t.Errorf("the ConfigMap webhook was called %d times, want never: its namespaceSelector matches no namespace", n)
		}
	})

	t.Run("objectSelector", func(t *testing.T) {
		k := newCase(e.main, "objselector")
		ns := k.namespace(t, nil)
		const color = "color"
		k.c.hooks.handle(k.path("blue-objects"), allow)
		hook := validatingHook(k.hookName("blue-objects"), k.c.hooks.clientConfig(k.path("blue-objects")), k.selector(nil),
			configMapRule(opCreate, opUpdate, opDelete))
		hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{color: "blue"}}
		k.c.createValidating(t, validatingConfig(k.configName("objects"), hook))

		cms := k.c.Client.CoreV1().ConfigMaps(ns)
		relabel := func(name, value string) {
			t.Helper()
			cm := k.storedConfigMap(t, ns, name)
			cm.Labels[color] = value
			updated, err := cms.Update(k.ctx(t), cm, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("relabelling %s %s: %v", name, value, err)
			}
			// A DELETE first judges the watch cache's copy of the object and, if that copy
			// was stale, judges the stored one again (upstream's store does this, stock
			// included). Reading at the update's resourceVersion waits until the cache holds
			// it, so the DELETE below is judged once, on the relabelled object.
			if _, err := cms.Get(k.ctx(t), name, metav1.GetOptions{ResourceVersion: updated.ResourceVersion}); err != nil {
				t.Fatalf("waiting for the watch cache to hold %s at resourceVersion %s: %v", name, updated.ResourceVersion, err)
			}
		}
		remove := func(name string) {
			t.Helper()
			if err := cms.Delete(k.ctx(t), name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting %s: %v", name, err)
			}
		}
		// blue-to-red: CREATE matches the new object; UPDATE matches the old one; DELETE of a
		// red object does not match. red-to-blue: the mirror image.
		k.mustCreateConfigMap(t, k.configMap(ns, "blue-to-red", map[string]string{color: "blue"}))
		relabel("blue-to-red", "red")
		remove("blue-to-red")
		k.mustCreateConfigMap(t, k.configMap(ns, "red-to-blue", map[string]string{color: "red"}))
		relabel("red-to-blue", "blue")
		remove("red-to-blue")

		operations := func(name string) []admissionv1.Operation {
			var ops []admissionv1.Operation
			for _, c := range callsFor(k.c.hooks, k.path("blue-objects"), name) {
				ops = append(ops, c.Request.Operation)
			}
			return ops
		}
		t.Run("CREATE matches the new object and UPDATE the old one", func(t *testing.T) {
			if got, want := operations("blue-to-red"), []admissionv1.Operation{admissionv1.Create, admissionv1.Update}; !slices.Equal(got, want) {
				t.Errorf("blue-to-red: webhook called for %v, want %v (DELETE of a red object must not match)", got, want)
			}
		})
		t.Run("UPDATE matches the new object and DELETE the old one", func(t *testing.T) {
			if got, want := operations("red-to-blue"), []admissionv1.Operation{admissionv1.Update, admissionv1.Delete}; !slices.Equal(got, want) {
				t.Errorf("red-to-blue: webhook called for %v, want %v (CREATE of a red object must not match)", got, want)
			}
		})
	})

	t.Run("matchConditions", func(t *testing.T) {
		k := newCase(e.main, "conditions")
		ns := k.namespace(t, nil)
		const errorsLabel = "condition-errors"
		k.c.hooks.handle(k.path("name-prefix"), allow)
		byName := validatingHook(k.hookName("name-prefix"), k.c.hooks.clientConfig(k.path("name-prefix")), k.selector(nil), configMapRule(opCreate))
		byName.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: errorsLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
		byName.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "name-prefix", Expression: "object.metadata.name.startsWith('match-')"}}
		hooks := []admissionregistrationv1.ValidatingWebhook{byName}
		// A condition that cannot be evaluated: the label it reads is absent.
		for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
			name := "erroring-" + strings.ToLower(string(policy))
			k.c.hooks.handle(k.path(name), allow)
			hook := validatingHook(k.hookName(name), k.c.hooks.clientConfig(k.path(name)), k.selector(nil), configMapRule(opCreate))
			hook.FailurePolicy = ptr(policy)
			hook.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{errorsLabel: string(policy)}}
			hook.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "reads-absent-label", Expression: "object.metadata.labels['absent'] == 'x'"}}
			hooks = append(hooks, hook)
		}
		k.c.createValidating(t, validatingConfig(k.configName("conditions"), hooks...))

		t.Run("a true condition calls the webhook and a false one skips it", func(t *testing.T) {
			k.mustCreateConfigMap(t, k.configMap(ns, "match-1", nil))
			k.mustCreateConfigMap(t, k.configMap(ns, "skip-1", nil))
			if n := len(callsFor(k.c.hooks, k.path("name-prefix"), "match-1")); n != 1 {
				t.Errorf("condition true: webhook called %d times, want once", n)
			}
			if n := len(callsFor(k.c.hooks, k.path("name-prefix"), "skip-1")); n != 0 {
				t.Errorf("condition false: webhook called %d times, want never", n)
			}
		})
		t.Run("an erroring condition under Fail refuses the request without calling the webhook", func(t *testing.T) {
			_, err := k.createConfigMap(t, k.configMap(ns, "errors-fail", map[string]string{errorsLabel: "Fail"}))
			if !apierrors.IsForbidden(err) {
				t.Errorf("want 403 Forbidden, got %v", err)
			}
			wantRefused(t, err, "no such key")
			k.wantNotStored(t, ns, "errors-fail")
			if n := len(k.c.hooks.callsTo(k.path("erroring-fail"))); n != 0 {
				t.Errorf("the webhook was called %d times, want never", n)
			}
		})
		t.Run("an erroring condition under Ignore skips the webhook and admits the request", func(t *testing.T) {
			if _, err := k.createConfigMap(t, k.configMap(ns, "errors-ignore", map[string]string{errorsLabel: "Ignore"})); err != nil {
				t.Errorf("want admitted, got %v", err)
			}
			if n := len(k.c.hooks.callsTo(k.path("erroring-ignore"))); n != 0 {
				t.Errorf("the webhook was called %d times, want never", n)
			}
		})
	})
}

// testMatchPolicy registers webhooks for v1 of a custom resource served at v1 and v2, then
// sends requests through v2. Equivalent converts the request to v1 for the webhook; Exact
// leaves the webhook out.
func testMatchPolicy(t *testing.T, e *env) {
	k := newCase(e.main, "matchpolicy")
	ns := k.namespace(t, nil)
	const group = "matchpolicy.webhook.test"
	gvr := func(version string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: "widgets"}
	}
	k.createWidgetCRD(t, group)

	k.c.hooks.handle(k.path("equivalent"), func(c *call) *admissionv1.AdmissionResponse {
		return patched(setAnnotation(c.objectMeta(), "seen-as", apiVersionOf(c)))
	})
	k.c.hooks.handle(k.path("exact"), func(*call) *admissionv1.AdmissionResponse { return nil })
	v1Rule := rule([]string{group}, []string{"v1"}, []string{"widgets"}, opCreate)
	equivalent := mutatingHook(k.hookName("equivalent"), k.c.hooks.clientConfig(k.path("equivalent")), k.selector(nil), v1Rule)
	equivalent.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	k.c.createMutating(t, mutatingConfig(k.configName("equivalent"), equivalent))
	exact := validatingHook(k.hookName("exact"), k.c.hooks.clientConfig(k.path("exact")), k.selector(nil), v1Rule)
	exact.MatchPolicy = ptr(admissionregistrationv1.Exact)
	k.c.createValidating(t, validatingConfig(k.configName("exact"), exact))

	widget := func(version, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/" + version,
			"kind":       "Widget",
			"metadata":   map[string]any{"name": name, "labels": map[string]any{caseLabel: k.id}},
			"spec":       map[string]any{"size": "large"},
		}}
	}
	if _, err := k.c.dynamic.Resource(gvr("v2")).Namespace(ns).Create(k.ctx(t), widget("v2", "through-v2"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Widget through v2: %v", err)
	}

	t.Run("Equivalent calls the webhook with the object converted to its registered version", func(t *testing.T) {
		calls := callsFor(k.c.hooks, k.path("equivalent"), "through-v2")
		if len(calls) != 1 {
			t.Fatalf("the Equivalent webhook was called %d times, want once", len(calls))
		}
		req := calls[0].Request
		if got := apiVersionOf(calls[0]); got != group+"/v1" {
			t.Errorf("request.object.apiVersion = %q, want %s/v1", got, group)
		}
		if req.Kind.Version != "v1" || req.Resource.Version != "v1" {
			t.Errorf("request.kind %v, request.resource %v: want version v1", req.Kind, req.Resource)
		}
		if req.RequestKind == nil || req.RequestKind.Version != "v2" || req.RequestResource == nil || req.RequestResource.Version != "v2" {
			t.Errorf("request.requestKind %v, request.requestResource %v: want version v2, the version the client used", req.RequestKind, req.RequestResource)
		}
		// The webhook's patch, made against v1, is converted back and stored: read the
		// object back from storage, through the version the client used.
		stored, err := k.c.dynamic.Resource(gvr("v2")).Namespace(ns).Get(k.ctx(t), "through-v2", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the Widget back: %v", err)
		}
		if got := stored.GetAnnotations()["seen-as"]; got != group+"/v1" {
			t.Errorf("the stored Widget's seen-as annotation is %q, want %s/v1 (the webhook's patch)", got, group)
		}
	})
	t.Run("Exact does not call the webhook for another version", func(t *testing.T) {
		if n := len(callsFor(k.c.hooks, k.path("exact"), "through-v2")); n != 0 {
			t.Errorf("the Exact webhook was called %d times for a v2 request, want never", n)
		}
	})
	t.Run("Exact calls the webhook for its own version", func(t *testing.T) {
		if _, err := k.c.dynamic.Resource(gvr("v1")).Namespace(ns).Create(k.ctx(t), widget("v1", "through-v1"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a Widget through v1: %v", err)
		}
		if n := len(callsFor(k.c.hooks, k.path("exact"), "through-v1")); n != 1 {
			t.Errorf("the Exact webhook was called %d times for a v1 request, want once", n)
		}
	})
}

// apiVersionOf is the apiVersion of the call's object.
func apiVersionOf(c *call) string {
	var typeMeta metav1.TypeMeta
	_ = json.Unmarshal(c.Request.Object.Raw, &typeMeta)
	return typeMeta.APIVersion
}

// createWidgetCRD creates the namespaced Widget kind of group, served at v1 (stored) and v2
// with no conversion webhook, and waits until both versions serve.
func (k *suiteCase) createWidgetCRD(t *testing.T, group string) {
	t.Helper()
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	schemaless := map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{
				map[string]any{"name": "v1", "served": true, "storage": true, "schema": schemaless},
				map[string]any{"name": "v2", "served": true, "storage": false, "schema": schemaless},
			},
		},
	}}
	crds := k.c.dynamic.Resource(crdGVR)
	if _, err := crds.Create(k.ctx(t), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Widget CRD: %v", err)
	}
	deleteAtEnd(t, "CustomResourceDefinition "+crd.GetName(), func(ctx context.Context) error {
		return crds.Delete(ctx, crd.GetName(), metav1.DeleteOptions{})
	})
	for _, version := range []string{"v1", "v2"} {
		widgets := k.c.dynamic.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: "widgets"})
		eventually(t, pollTimeout, "Widgets to be served at "+version, func(ctx context.Context) (bool, error) {
			_, err := widgets.List(ctx, metav1.ListOptions{})
			return err == nil, err
		})
	}
}
