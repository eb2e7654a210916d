package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// caseLabel marks every namespace (and cluster-scoped object) a case creates with the
	// case's id. Each webhook selects on it, so no case's webhooks see another case's requests.
	caseLabel = "webhook-suite.portcullis.dev/case"
	// probeLabel marks the dry-run ConfigMaps that probe whether the server has loaded a
	// configuration; its value is the configuration's name.
	probeLabel = "webhook-suite.portcullis.dev/probe"

	// pollInterval and pollTimeout bound every wait in the suite.
	pollInterval = 100 * time.Millisecond
	pollTimeout  = 30 * time.Second
	// requestTimeout bounds one API request; the longest webhook call a case makes is 30s.
	requestTimeout = 45 * time.Second
)

// suiteCase is one case's view of a cluster: an id that names and labels its namespaces,
// webhooks, configurations and handler paths. Its helpers take the *testing.T of the
// (sub)test that calls them, so a failure is reported, and stops, where it happens.
type suiteCase struct {
	c  *cluster
	id string
}

func newCase(c *cluster, id string) *suiteCase {
	return &suiteCase{c: c, id: id}
}

// ctx is a context for one API request.
func (k *suiteCase) ctx(t *testing.T) context.Context { return requestContext(t) }

// requestContext is a context for one API request, bounded by requestTimeout.
func requestContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// deleteAtEnd runs del, within requestTimeout, when the test ends; what names the object
// in the failure a failed delete reports.
func deleteAtEnd(t *testing.T, what string, del func(ctx context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", what, err)
		}
	})
}

// namespace creates a namespace labelled with the case's id and extra, and its default
// ServiceAccount (no controller manager runs to create it).
func (k *suiteCase) namespace(t *testing.T, extra map[string]string) string {
	t.Helper()
	ns, err := k.c.Client.CoreV1().Namespaces().Create(k.ctx(t), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: k.id + "-", Labels: k.labels(extra)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace for %s: %v", k.id, err)
	}
	if _, err := k.c.Client.CoreV1().ServiceAccounts(ns.Name).Create(k.ctx(t), &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the default ServiceAccount of %s: %v", ns.Name, err)
	}
	return ns.Name
}

// selector matches the case's namespaces (or objects) that also carry extra.
func (k *suiteCase) selector(extra map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: k.labels(extra)}
}

// hookName is a webhook's fully qualified name.
func (k *suiteCase) hookName(name string) string { return name + "." + k.id + ".webhook.test" }

// path is the handler path of the case's webhook name.
func (k *suiteCase) path(name string) string { return "/" + k.id + "/" + name }

// configName names one of the case's configurations.
func (k *suiteCase) configName(name string) string { return k.id + "-" + name }

// labels are the case's label plus extra.
func (k *suiteCase) labels(extra map[string]string) map[string]string {
	labels := map[string]string{caseLabel: k.id}
	for key, value := range extra {
		labels[key] = value
	}
	return labels
}

// configMap is a ConfigMap in ns labelled with the case's id and extra.
func (k *suiteCase) configMap(ns, name string, extra map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: k.labels(extra)},
		Data:       map[string]string{"key": "value"},
	}
}

// createConfigMap creates cm and returns the server's answer.
func (k *suiteCase) createConfigMap(t *testing.T, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return k.c.Client.CoreV1().ConfigMaps(cm.Namespace).Create(k.ctx(t), cm, metav1.CreateOptions{})
}

// mustCreateConfigMap creates cm, failing the test if the server refuses it.
func (k *suiteCase) mustCreateConfigMap(t *testing.T, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out, err := k.createConfigMap(t, cm)
	if err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	return out
}

// wantNotStored fails unless ns/name is absent from storage.
func (k *suiteCase) wantNotStored(t *testing.T, ns, name string) {
	t.Helper()
	_, err := k.c.Client.CoreV1().ConfigMaps(ns).Get(k.ctx(t), name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s/%s: want NotFound (nothing stored), got %v", ns, name, err)
	}
}

// storedConfigMap reads ns/name back from the server.
func (k *suiteCase) storedConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := k.c.Client.CoreV1().ConfigMaps(ns).Get(k.ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ConfigMap %s/%s back: %v", ns, name, err)
	}
	return cm
}

// callsFor returns the calls on path whose object (or old object) is named name.
func callsFor(s *webhookServer, path, name string) []*call {
	var out []*call
	for _, c := range s.callsTo(path) {
		if c.Request.Name == name || c.objectMeta().Name == name {
			out = append(out, c)
		}
	}
	return out
}

// eventually polls condition every pollInterval until it holds, failing the test with what
// (and the last error condition returned) after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, condition func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := condition(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			t.Fatalf("waiting %s for %s: %v (last error: %v)", timeout, what, err, last)
		}
		t.Fatalf("waiting %s for %s: %v", timeout, what, err)
	}
}

// Webhook builders. Every webhook declares sideEffects None and fails closed unless a case
// says otherwise, so a webhook that is not reached shows up as a refused request.

func ptr[T any](v T) *T { return &v }

func rule(groups, versions, resources []string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources},
	}
}

// configMapRule matches ConfigMaps for ops.
func configMapRule(ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return rule([]string{""}, []string{"v1"}, []string{"configmaps"}, ops...)
}

var (
	opCreate  = admissionregistrationv1.Create
	opUpdate  = admissionregistrationv1.Update
	opDelete  = admissionregistrationv1.Delete
	opConnect = admissionregistrationv1.Connect
	opAll     = admissionregistrationv1.OperationAll
)

func validatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, namespaces *metav1.LabelSelector, rules ...admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            cc,
		Rules:                   rules,
		NamespaceSelector:       namespaces,
		FailurePolicy:           ptr(admissionregistrationv1.Fail),
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func mutatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, namespaces *metav1.LabelSelector, rules ...admissionregistrationv1.RuleWithOperations) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:                    name,
		ClientConfig:            cc,
		Rules:                   rules,
		NamespaceSelector:       namespaces,
		FailurePolicy:           ptr(admissionregistrationv1.Fail),
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func validatingConfig(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func mutatingConfig(name string, hooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

// JSON Patch responses.

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// patched allows the request with a JSONPatch of ops.
func patched(ops ...patchOp) *admissionv1.AdmissionResponse {
	patch, err := json.Marshal(ops)
	if err != nil {
		// Only strings and maps of strings are marshalled here.
		return denied(fmt.Sprintf("marshalling the patch: %v", err))
	}
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: ptr(admissionv1.PatchTypeJSONPatch)}
}

// denied refuses the request with message.
func denied(message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: message}}
}

// setLabel sets a label on an object whose metadata is meta.
func setLabel(meta metav1.ObjectMeta, key, value string) patchOp {
	if meta.Labels == nil {
		return patchOp{Op: "add", Path: "/metadata/labels", Value: map[string]string{key: value}}
	}
	return patchOp{Op: "add", Path: "/metadata/labels/" + escapePointer(key), Value: value}
}

// setAnnotation sets an annotation on an object whose metadata is meta.
func setAnnotation(meta metav1.ObjectMeta, key, value string) patchOp {
	if meta.Annotations == nil {
		return patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{key: value}}
	}
	return patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(key), Value: value}
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// wantRefused fails unless err is an API error whose message contains every one of want.
func wantRefused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("the request succeeded; want it refused with %q", want)
		return
	}
	if _, ok := err.(apierrors.APIStatus); !ok {
		t.Errorf("want an API error saying %q, got %T: %v", want, err, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal %q does not say %q", err.Error(), w)
		}
	}
}
