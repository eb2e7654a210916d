package webhook

// The cases here compare Portcullis's dispatch (every setting on) with stock's binary on the
// same scenario: what is stored, what each webhook receives, and what the servers record
// (upstream's webhook metrics and the webhook audit annotations).

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// tokenClients are clients that authenticate to c with chainToken: the same user on both
// servers, so that what webhooks receive is comparable byte for byte.
func tokenClients(t *testing.T, c *cluster) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	config := rest.AnonymousClientConfig(c.Config)
	config.CAFile = c.Config.CAFile
	config.BearerToken = chainToken
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client, dyn
}

// testMultiVersionChain: a Widget CRD served at v1 (stored) and v2 without conversion, and
// three mutating webhooks in order: A (v1) adds label a; B (v2 only, so called with the
// object converted to v2) answers without a patch; C (v1) refuses an object without label a
// and adds label c. A Widget created through v1 is stored with a and c on both servers, and
// each webhook receives from ours the bytes it receives from stock. (Our dispatch once sent C
// the object as it was before A, from a cache that upstream's in-place conversion had made
// stale.)
func testMultiVersionChain(t *testing.T, e *env, ours, stock *cluster) {
	const group, nsName, name = "multiversion.example.com", "multi-version", "chained"
	servers := map[string]*cluster{"ours": ours, "stock": stock}
	k := map[string]*suiteCase{}
	widgetRule := func(version string) admissionregistrationv1.RuleWithOperations {
		return rule([]string{group}, []string{version}, []string{"widgets"}, opCreate)
	}
	for side, c := range servers {
		k[side] = newCase(c, "multi-version-"+side)
		k[side].createWidgetCRD(t, group)
		if _, err := c.Client.CoreV1().Namespaces().Create(requestContext(t), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: map[string]string{caseLabel: "multi-version"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating namespace %s: %v", side, nsName, err)
		}
		path := k[side].path
		e.hooks.handle(path("a"), func(c *call) *admissionv1.AdmissionResponse {
			return patched(setLabel(c.objectMeta(), "a", "yes"))
		})
		e.hooks.handle(path("b"), func(*call) *admissionv1.AdmissionResponse { return nil })
		e.hooks.handle(path("c"), func(c *call) *admissionv1.AdmissionResponse {
			if c.objectMeta().Labels["a"] != "yes" {
				return denied("C received the object without A's label")
			}
			return patched(setLabel(c.objectMeta(), "c", "yes"))
		})
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: "multi-version"}}
		c.createMutating(t, mutatingConfig("multi-version",
			mutatingHook("a.multi-version.webhook.test", e.hooks.clientConfig(path("a")), selector, widgetRule("v1")),
			mutatingHook("b.multi-version.webhook.test", e.hooks.clientConfig(path("b")), selector, widgetRule("v2")),
			mutatingHook("c.multi-version.webhook.test", e.hooks.clientConfig(path("c")), selector, widgetRule("v1"))))
	}

	stored := map[string]map[string]string{}
	for side, c := range servers {
		_, dyn := tokenClients(t, c)
		widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(nsName)
		widget := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "widget"}},
			"spec":     map[string]any{"size": int64(3), "colour": "blue"},
		}}
		if _, err := widgets.Create(requestContext(t), widget, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating the Widget: %v", side, err)
		}
		got, err := widgets.Get(requestContext(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: reading the Widget back: %v", side, err)
		}
		stored[side] = got.GetLabels()
		if !reflect.DeepEqual(got.Object["spec"], widget.Object["spec"]) {
			t.Errorf("%s: stored spec %v, want %v", side, got.Object["spec"], widget.Object["spec"])
		}
	}
	want := map[string]string{"app": "widget", "a": "yes", "c": "yes"}
	for side, labels := range stored {
		if !maps.Equal(labels, want) {
			t.Errorf("%s stored labels %v, want %v", side, labels, want)
		}
	}
	wantStockBodies(t, e, k, []string{"a", "b", "c"}, name)
}

// parityWebhookMetrics are upstream's webhook metrics, compared series by series.
var parityWebhookMetrics = []string{
	"apiserver_admission_webhook_request_total",
	"apiserver_admission_webhook_rejection_count",
	"apiserver_admission_webhook_admission_duration_seconds_count",
	"apiserver_admission_webhook_fail_open_count",
}

// webhookSeries reads, from a /metrics text, every series of parityWebhookMetrics whose
// webhook name ends in suffix, by metric and labels.
func webhookSeries(text, suffix string) map[string]float64 {
	out := map[string]float64{}
	for _, metric := range parityWebhookMetrics {
		for _, line := range metricSamples(text, metric, nil) {
			series, value, ok := strings.Cut(line, " ")
			if !ok || !strings.Contains(series, suffix+`"`) {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				continue
			}
			out[series] = v
		}
	}
	return out
}

// delta is after less before, series by series, leaving out series that did not change.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for series, v := range after {
		if d := v - before[series]; d != 0 {
			out[series] = d
		}
	}
	return out
}

// testRecordsMatchStock: mutating webhooks (one patching with a warning and an audit
// annotation, one failing under Ignore) and validating webhooks (one allowing with a
// warning and an audit annotation, one failing under Ignore, one denying what is labelled
// so); an admitted and a denied create on each server. Upstream's webhook metrics change by
// the same amounts, series by series, and the audit events carry the same webhook
// annotations and the clients the same warnings, on each of ours (keyed by name in servers)
// as on servers["stock"].
func testRecordsMatchStock(t *testing.T, e *env, servers map[string]*cluster) {
	const nsName, suffix = "records", ".records.webhook.test"
	hook := func(name string) string { return name + suffix }
	before := map[string]map[string]float64{}
	for side, c := range servers {
		k := newCase(c, "records-"+strings.ReplaceAll(side, " ", "-"))
		if _, err := c.Client.CoreV1().Namespaces().Create(requestContext(t), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: map[string]string{caseLabel: "records"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating namespace %s: %v", side, nsName, err)
		}
		e.hooks.handle(k.path("patcher"), func(c *call) *admissionv1.AdmissionResponse {
			r := patched(setLabel(c.objectMeta(), "patched", "yes"))
			r.Warnings, r.AuditAnnotations = []string{"the patcher was here"}, map[string]string{"patched": "yes"}
			return r
		})
		e.hooks.handle(k.path("allower"), func(*call) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"the allower was here"}, AuditAnnotations: map[string]string{"allowed": "yes"}}
		})
		e.hooks.handle(k.path("denier"), func(*call) *admissionv1.AdmissionResponse { return denied("labelled to be denied") })
		e.hooks.handleRaw(k.path("broken"), func(w http.ResponseWriter, _ *http.Request, _ *call) {
			http.Error(w, "the webhook broke", http.StatusInternalServerError)
		})
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: "records"}}
		admitted := &metav1.LabelSelector{MatchLabels: map[string]string{"deny": "no"}}
		ignore := func(h admissionregistrationv1.ValidatingWebhook) admissionregistrationv1.ValidatingWebhook {
			h.FailurePolicy, h.ObjectSelector = ptr(admissionregistrationv1.Ignore), admitted
			return h
		}
		// The failing webhooks are called once, for the admitted create: a second failure
		// would find its breaker open (this server's threshold is 1) and make no call.
		brokenMutating := mutatingHook(hook("broken-mutating"), e.hooks.clientConfig(k.path("broken")), selector, configMapRule(opCreate))
		brokenMutating.FailurePolicy, brokenMutating.ObjectSelector = ptr(admissionregistrationv1.Ignore), admitted
		c.createMutating(t, mutatingConfig("records",
			mutatingHook(hook("patcher"), e.hooks.clientConfig(k.path("patcher")), selector, configMapRule(opCreate)),
			brokenMutating))
		allower := validatingHook(hook("allower"), e.hooks.clientConfig(k.path("allower")), selector, configMapRule(opCreate))
		allower.ObjectSelector = admitted
		denier := validatingHook(hook("denier"), e.hooks.clientConfig(k.path("denier")), selector, configMapRule(opCreate))
		denier.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"deny": "yes"}}
		c.createValidating(t, validatingConfig("records", allower,
			ignore(validatingHook(hook("broken-validating"), e.hooks.clientConfig(k.path("broken")), selector, configMapRule(opCreate))),
			denier))
		before[side] = webhookSeries(c.metrics(t), suffix)
	}

	warnings := map[string][]string{}
	annotations := map[string]map[string]string{}
	changes := map[string]map[string]float64{}
	for side, c := range servers {
		admitted := c.create(requestContext(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: "admitted", Labels: map[string]string{"deny": "no"}}}, "")
		if admitted.err != nil {
			t.Fatalf("%s: want the ConfigMap admitted, got %v", side, admitted.err)
		}
		warnings[side] = admitted.warnings
		denied := c.create(requestContext(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: "denied", Labels: map[string]string{"deny": "yes"}}}, "")
		wantRefused(t, denied.err, fmt.Sprintf("admission webhook %q denied the request: labelled to be denied", hook("denier")))
		var event map[string]string
		eventually(t, pollTimeout, side+": the audit event of the admitted create", func(context.Context) (bool, error) {
			found, err := findAuditEvent(c.auditLog, nsName, "admitted")
			if err != nil || found == nil {
				return false, err
			}
			event = found.Annotations
			return true, nil
		})
		annotations[side] = map[string]string{}
		for key, value := range event {
			if strings.Contains(key, "webhook.admission.k8s.io/") || strings.HasSuffix(strings.SplitN(key, "/", 2)[0], suffix) {
				annotations[side][key] = value
			}
		}
		changes[side] = delta(before[side], webhookSeries(c.metrics(t), suffix))
	}

	if len(changes["stock"]) == 0 {
		t.Fatal("stock recorded no webhook metric: the scenario did not run")
	}
	for _, prefix := range []string{"patch.webhook.admission.k8s.io/", "mutation.webhook.admission.k8s.io/", "failed-open.validating.webhook.admission.k8s.io/", "failed-open.mutation.webhook.admission.k8s.io/"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(annotations["stock"])), func(k string) bool { return strings.HasPrefix(k, prefix) }) {
			t.Errorf("stock's audit event has no %s annotation: %v", prefix, annotations["stock"])
		}
	}
	slices.Sort(warnings["stock"])
	if len(warnings["stock"]) == 0 {
		t.Error("stock's client received no warning: the scenario did not run")
	}
	for side := range servers {
		if side == "stock" {
			continue
		}
		t.Run(side, func(t *testing.T) {
			if !maps.Equal(changes[side], changes["stock"]) {
				t.Errorf("upstream's webhook metrics changed otherwise than stock's:\n%s: %v\nstock: %v", side, changes[side], changes["stock"])
			}
			if !maps.Equal(annotations[side], annotations["stock"]) {
				t.Errorf("the webhook audit annotations differ from stock's:\n%s: %v\nstock: %v", side, annotations[side], annotations["stock"])
			}
			slices.Sort(warnings[side])
			if !slices.Equal(warnings[side], warnings["stock"]) {
				t.Errorf("the client's warnings differ from stock's:\n%s: %q\nstock: %q", side, warnings[side], warnings["stock"])
			}
		})
	}
}

// patchShapes are the mutating webhooks of testPatchShapesMatchStock, in order: each patches
// a pod in one of the ways webhooks do, so that between them every path of the dispatch's
// patch application runs (a member of an object set, replaced or removed; an array appended
// to; a patch that changes nothing; none), with a defaulted field removed (defaulting puts
// it back before the next webhook) and a reinvoked webhook.
var patchShapes = []struct {
	name     string
	reinvoke bool
	respond  func(c *call) *admissionv1.AdmissionResponse
}{
	{"label", true, func(c *call) *admissionv1.AdmissionResponse {
		return patched(setLabel(c.objectMeta(), "shape/label", "yes"))
	}},
	{"annotate", false, func(c *call) *admissionv1.AdmissionResponse {
		return patched(setAnnotation(c.objectMeta(), "shape/annotation", "<&>"))
	}},
	{"sidecar", false, func(c *call) *admissionv1.AdmissionResponse {
		return patched(patchOp{Op: "add", Path: "/spec/containers/-", Value: map[string]any{"name": "sidecar", "image": "registry.k8s.io/pause:3.10"}})
	}},
	{"undefault", false, func(*call) *admissionv1.AdmissionResponse {
		return patched(patchOp{Op: "remove", Path: "/spec/dnsPolicy"})
	}},
	{"replace", false, func(*call) *admissionv1.AdmissionResponse {
		return patched(patchOp{Op: "replace", Path: "/spec/restartPolicy", Value: "Never"})
	}},
	{"unchanged", false, func(c *call) *admissionv1.AdmissionResponse {
		return patched(setLabel(c.objectMeta(), "app", c.objectMeta().Labels["app"]))
	}},
	{"no-patch", false, func(*call) *admissionv1.AdmissionResponse { return nil }},
}

// creationTimestamp is an object's creation time, which differs between two servers.
var creationTimestamp = regexp.MustCompile(`"creationTimestamp":"[^"]*"`)

// testPatchShapesMatchStock: the same pod created on ours and on stock through patchShapes,
// then a validating webhook: every call of every webhook (the reinvoked one's two included)
// receives from ours the body stock sends it, but for the request's uid and managedFields'
// times, and the pods stored are the same but for what the server assigns.
func testPatchShapesMatchStock(t *testing.T, e *env, ours, stock *cluster) {
	const nsName, podName = "patch-shapes", "shaped"
	servers := map[string]*cluster{"ours": ours, "stock": stock}
	k := map[string]*suiteCase{}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{caseLabel: "patch-shapes"}}
	podRule := rule([]string{""}, []string{"v1"}, []string{"pods"}, opCreate)
	for side, c := range servers {
		k[side] = newCase(c, "patch-shapes-"+side)
		if _, err := c.Client.CoreV1().Namespaces().Create(requestContext(t), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: map[string]string{caseLabel: "patch-shapes"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating namespace %s: %v", side, nsName, err)
		}
		if _, err := c.Client.CoreV1().ServiceAccounts(nsName).Create(requestContext(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating the default ServiceAccount: %v", side, err)
		}
		var hooks []admissionregistrationv1.MutatingWebhook
		for _, shape := range patchShapes {
			path := k[side].path(shape.name)
			e.hooks.handle(path, shape.respond)
			hook := mutatingHook(shape.name+".patch-shapes.webhook.test", e.hooks.clientConfig(path), selector, podRule)
			if shape.reinvoke {
				hook.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
			}
			hooks = append(hooks, hook)
		}
		c.createMutating(t, mutatingConfig("patch-shapes", hooks...))
		e.hooks.handle(k[side].path("final"), func(*call) *admissionv1.AdmissionResponse { return nil })
		c.createValidating(t, validatingConfig("patch-shapes",
			validatingHook("final.patch-shapes.webhook.test", e.hooks.clientConfig(k[side].path("final")), selector, podRule)))
	}

	stored := map[string]*corev1.Pod{}
	uids := map[string]string{}
	for side, c := range servers {
		client, _ := tokenClients(t, c)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName, Labels: map[string]string{"app": "shaped"}},
			// No token volume, whose name each server draws at random.
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr(false), Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		}
		if _, err := client.CoreV1().Pods(nsName).Create(requestContext(t), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating the pod: %v", side, err)
		}
		got, err := c.Client.CoreV1().Pods(nsName).Get(requestContext(t), podName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: reading the pod back: %v", side, err)
		}
		uids[side] = string(got.UID)
		// What each server assigns on its own.
		got.UID, got.ResourceVersion, got.CreationTimestamp, got.ManagedFields = "", "", metav1.Time{}, nil
		stored[side] = got
	}
	if !apiequality.Semantic.DeepEqual(stored["ours"], stored["stock"]) {
		t.Errorf("ours stored a pod other than stock's:\n ours: %+v\nstock: %+v", stored["ours"], stored["stock"])
	}
	s := stored["stock"]
	if s.Labels["shape/label"] != "yes" || len(s.Spec.Containers) != 2 || s.Spec.DNSPolicy != corev1.DNSClusterFirst || s.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("stock's pod is not what the webhooks made it (the scenario did not run): %+v", s)
	}

	var names []string
	for _, shape := range patchShapes {
		names = append(names, shape.name)
	}
	for _, hook := range append(names, "final") {
		bodies := map[string][][]byte{}
		for side, c := range k {
			for _, call := range callsFor(e.hooks, c.path(hook), podName) {
				// The validating webhook sees what the server assigned: the pod's uid and
				// creation time.
				body := bytes.ReplaceAll(normalizeRequestBody(call), []byte(uids[side]), []byte("POD-UID"))
				bodies[side] = append(bodies[side], creationTimestamp.ReplaceAll(body, []byte(`"creationTimestamp":"TIME"`)))
			}
		}
		want := 1
		if hook == patchShapes[0].name {
			want = 2 // reinvoked: the sidecar changed the pod after it
		}
		if len(bodies["stock"]) != want {
			t.Fatalf("stock called webhook %s %d times, want %d", hook, len(bodies["stock"]), want)
		}
		if len(bodies["ours"]) != len(bodies["stock"]) {
			t.Fatalf("ours called webhook %s %d times, stock %d", hook, len(bodies["ours"]), len(bodies["stock"]))
		}
		for i := range bodies["stock"] {
			if !bytes.Equal(bodies["ours"][i], bodies["stock"][i]) {
				t.Errorf("webhook %s, call %d: a request body other than stock's:\n%s", hook, i+1, firstDifference(bodies["ours"][i], bodies["stock"][i]))
			}
		}
	}
}
