package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// labellerLabel is the label the labelling webhook adds to every object it is called for.
const labellerLabel = "labeller.portcullis.io/seen"

// labeller is a mutating webhook that changes every new object of its resources, as a
// sidecar injector or a labeller in a real cluster does: it adds labellerLabel. Any change
// by a webhook makes the server run the in-tree mutating plugins a second time
// (k8s.io/apiserver's reinvocation), which is what the plugins of ours must survive.
type labeller struct {
	calls atomic.Int64
}

// installLabeller serves the labelling webhook and registers it for CREATE of resources in
// group/version ("" is the core group), failurePolicy Fail so that a call that does not
// happen cannot pass unnoticed. It is removed when the test ends.
func installLabeller(t *testing.T, client kubernetes.Interface, group, version string, resources ...string) *labeller {
	t.Helper()
	l := &labeller{}
	server := webhooktest.StartOpenReviewServer(t, func(_ *http.Request, request *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		l.calls.Add(1)
		patch, err := addLabelPatch(request.Object.Raw)
		if err != nil {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusBadRequest, Message: err.Error()}}
		}
		patchType := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &patchType}
	})
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	name := "labeller-" + strings.Join(resources, "-")
	ctx := context.Background()
	_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "labeller.portcullis.io",
			ClientConfig: server.ClientConfig("/label"),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("registering the labelling webhook: %v", err)
	}
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return l
}

// waitCalled polls probe, a request the webhook's rules match (a dry run, so that it
// leaves nothing behind), until the webhook is called: the server reads webhook
// configurations from an informer.
func (l *labeller) waitCalled(t *testing.T, probe func(context.Context) error) {
	t.Helper()
	before := l.calls.Load()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_ = probe(ctx)
		return l.calls.Load() > before, nil
	})
	if err != nil {
		t.Fatalf("the labelling webhook was never called: %v", err)
	}
}

// addLabelPatch is the JSON patch adding labellerLabel to the object raw: into its labels,
// or as its only label (a JSON patch cannot add into a map that is not there).
func addLabelPatch(raw []byte) ([]byte, error) {
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("labeller: %w", err)
	}
	op := map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{labellerLabel: "true"}}
	if obj.Metadata.Labels != nil {
		op = map[string]any{"op": "add", "path": "/metadata/labels/" + strings.ReplaceAll(labellerLabel, "/", "~1"), "value": "true"}
	}
	return json.Marshal([]any{op})
}

// asPodCreator returns a client acting as the service account serviceAccount of ns, bound to
// a role that may only create pods: what the ReplicaSet or Job controller holds for the pods
// it creates, and no more.
func asPodCreator(t *testing.T, server *framework.APIServer, admin kubernetes.Interface, ns, serviceAccount string) kubernetes.Interface {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount + ":pod-creator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(context.Background(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, admin, ns, role.Name, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, serviceAccount, mayCreatePods(ns))
	return impersonate(t, server, fmt.Sprintf("system:serviceaccount:%s:%s", ns, serviceAccount))
}
