package mutating

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// newInitialized builds our plugin with config and gives it hooks (converted to mutating
// ones).
func newInitialized(t *testing.T, config string, hooks []admissionregistrationv1.ValidatingWebhook) admission.Interface {
	return runner(webhooktest.Ours(t, config, false)).Initialized(t, hooks)
}

// admit admits one request through p, recording its warnings and annotations.
func admit(t *testing.T, p admission.Interface) (admission.Attributes, error, *webhooktest.Recorder) {
	return runner(webhooktest.Mode{}).Request(t, p)
}

// TestConcurrentChains: many requests at once through a chain of three webhooks, each adding
// a label and a warning. Every request gets every label, warning and annotation, in the
// chain's order, and nothing is recorded after Admit returns.
func TestConcurrentChains(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		label := strings.TrimPrefix(r.URL.Path, "/")
		patch := fmt.Sprintf(`[{"op":"add","path":"/metadata/labels/%s","value":"yes"}]`, label)
		jsonPatch := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &jsonPatch, Warnings: []string{"from " + label}}
	})
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, name := range []string{"a", "b", "c"} {
		hooks = append(hooks, webhooktest.ValidatingWebhook(name+".example.com", server.ClientConfig("/"+name), admissionregistrationv1.Fail))
	}
	p := newInitialized(t, "circuitBreaker: {failureThreshold: 1000}\ntimeBudget: {}\n", hooks)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			attr, err, recorded := admit(t, p)
			if err != nil {
				t.Errorf("want admitted, got %v", err)
				return
			}
			labels := attr.GetObject().(metav1.Object).GetLabels()
			for _, name := range []string{"a", "b", "c"} {
				if labels[name] != "yes" {
					t.Errorf("label %s missing: %v", name, labels)
				}
			}
			if got := strings.Join(recorded.Warnings(), ","); got != "from a,from b,from c" {
				t.Errorf("warnings %q, want each webhook's in the chain's order", got)
			}
			for i, name := range []string{"a", "b", "c"} {
				key := fmt.Sprintf("mutation.webhook.admission.k8s.io/round_0_index_%d", i)
				want := fmt.Sprintf(`{"configuration":"test-webhooks","webhook":"%s.example.com","mutated":true}`, name)
				if got := recorded.Annotations()[key]; got != want {
					t.Errorf("annotation %s = %q, want %q", key, got, want)
				}
			}
		})
	}
	wg.Wait()
}

// TestOpenBreakersOfBothPolicies: a dead Ignore webhook, then a dead Fail webhook, breakers
// at a threshold of 1, many requests at once. Every request is refused by the Fail webhook
// with a 500, whether its call failed or its breaker was open, after the Ignore webhook was
// failed open and annotated; once both breakers are open, no call is made.
func TestOpenBreakersOfBothPolicies(t *testing.T) {
	hooks := []admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook("dead-ignore.example.com", webhooktest.ClosedClientConfig(t, "/ignore"), admissionregistrationv1.Ignore),
		webhooktest.ValidatingWebhook("dead-fail.example.com", webhooktest.ClosedClientConfig(t, "/fail"), admissionregistrationv1.Fail),
	}
	p := newInitialized(t, "circuitBreaker: {failureThreshold: 1, initialBackoff: 10m}\n", hooks)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, err, recorded := admit(t, p)
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "dead-fail.example.com") {
				t.Errorf("want a 500 naming the Fail webhook, got %v", err)
			}
			if got := recorded.Annotations(); got["failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"] != "dead-ignore.example.com" {
				t.Errorf("the Ignore webhook was not recorded as failed open: %v", got)
			}
		})
	}
	wg.Wait()
	_, err, recorded := admit(t, p)
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "dead-fail.example.com": circuit breaker open; not called`) {
		t.Errorf("after the breakers opened: want the Fail webhook's short circuit, got %v", err)
	}
	if !strings.Contains(strings.Join(recorded.Warnings(), "\n"), `admission webhook "dead-ignore.example.com" (failurePolicy Ignore) skipped: circuit breaker open`) {
		t.Errorf("after the breakers opened: warnings %q, want the Ignore webhook's skip", recorded.Warnings())
	}
}
