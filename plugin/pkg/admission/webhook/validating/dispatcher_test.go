package validating

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

// validate admits one request through p, recording its warnings and annotations.
func validate(t *testing.T, p admission.Interface) (error, *webhooktest.Recorder) {
	_, err, recorded := runner(webhooktest.Mode{}).Request(t, p)
	return err, recorded
}

// newInitialized builds our plugin with config and gives it hooks.
func newInitialized(t *testing.T, config string, hooks []admissionregistrationv1.ValidatingWebhook) admission.Interface {
	return runner(webhooktest.Ours(t, config, true)).Initialized(t, hooks)
}

// TestDenialRacesSlowerWebhooks: one webhook denies at once while slower ones answer with
// warnings and audit annotations; many such requests run at once. Whether the slower calls
// are waited for (no early exit: every warning and annotation is recorded, as stock) or
// cancelled (early exit), nothing is recorded after Validate returns, and the verdict is the
// denial.
func TestDenialRacesSlowerWebhooks(t *testing.T) {
	const slow = 4
	denierAnswered := make(chan struct{})
	var once sync.Once
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if r.URL.Path == "/deny" {
			once.Do(func() { close(denierAnswered) })
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "denied by the fast webhook", Code: http.StatusForbidden}}
		}
		// The slow webhooks answer once a denial has been sent (or when cancelled).
		select {
		case <-denierAnswered:
		case <-r.Context().Done():
			return nil
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"from " + r.URL.Path}, AuditAnnotations: map[string]string{"seen": "yes"}}
	})
	hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail)}
	for i := range slow {
		hooks = append(hooks, webhooktest.ValidatingWebhook(fmt.Sprintf("slow-%d.example.com", i), server.ClientConfig(fmt.Sprintf("/slow-%d", i)), admissionregistrationv1.Ignore))
	}
	for _, tc := range []struct {
		name      string
		config    string
		earlyExit bool
	}{
		{name: "breakers, no early exit", config: "circuitBreaker: {failureThreshold: 1000}\n"},
		{name: "early exit", config: "earlyExit: true\n", earlyExit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newInitialized(t, tc.config, hooks)
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					err, recorded := validate(t, p)
					if err == nil || !strings.Contains(err.Error(), "denied by the fast webhook") {
						t.Errorf("want the denial, got %v", err)
					}
					warnings, annotations := recorded.Warnings(), recorded.Annotations()
					if !tc.earlyExit && (len(warnings) != slow || len(annotations) != slow) {
						t.Errorf("waiting for every call, recorded warnings %q and annotations %v; want one of each from each of the %d slow webhooks",
							warnings, annotations, slow)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestOpenBreakersOfBothPolicies: a dead Fail webhook and a dead Ignore webhook, breakers at
// a threshold of 1, many requests at once. Every request is refused by the Fail webhook
// with a 500, whether its call failed or its breaker was open; the Ignore webhook is failed
// open, annotated, and (once its breaker is open) warned about.
func TestOpenBreakersOfBothPolicies(t *testing.T) {
	hooks := []admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook("dead-fail.example.com", webhooktest.ClosedClientConfig(t, "/fail"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("dead-ignore.example.com", webhooktest.ClosedClientConfig(t, "/ignore"), admissionregistrationv1.Ignore),
	}
	p := newInitialized(t, "circuitBreaker: {failureThreshold: 1, initialBackoff: 10m}\n", hooks)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			err, recorded := validate(t, p)
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "dead-fail.example.com") {
				t.Errorf("want a 500 naming the Fail webhook, got %v", err)
			}
			if got := recorded.Annotations(); got["failed-open.validating.webhook.admission.k8s.io/round_0_index_1"] != "dead-ignore.example.com" {
				t.Errorf("the Ignore webhook was not recorded as failed open: %v", got)
			}
		})
	}
	wg.Wait()
	// Once both breakers are open, a request is refused without a call.
	err, recorded := validate(t, p)
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "dead-fail.example.com": circuit breaker open; not called`) {
		t.Errorf("after the breakers opened: want the Fail webhook's short circuit, got %v", err)
	}
	if !strings.Contains(strings.Join(recorded.Warnings(), "\n"), `admission webhook "dead-ignore.example.com" (failurePolicy Ignore) skipped: circuit breaker open`) {
		t.Errorf("after the breakers opened: warnings %q, want the Ignore webhook's skip", recorded.Warnings())
	}
}

// TestEarlyExitCancelsWithoutFailingOpen: under early exit, a call cancelled by the denial is
// recorded as stock records a cancelled call (a duration sample, no rejection), and adds no
// failed-open annotation, though its webhook is Ignore.
func TestEarlyExitCancelsWithoutFailingOpen(t *testing.T) {
	held := make(chan struct{})
	var heldOnce sync.Once
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if r.URL.Path == "/deny" {
			<-held
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no", Code: http.StatusForbidden}}
		}
		heldOnce.Do(func() { close(held) })
		<-r.Context().Done()
		return nil
	})
	p := newInitialized(t, "earlyExit: true\n", []admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("held.example.com", server.ClientConfig("/held"), admissionregistrationv1.Ignore),
	})
	heldHook := map[string]string{"name": "held.example.com", "type": "validating"}
	samples := webhooktest.SampleCount(t, "apiserver_admission_webhook_admission_duration_seconds", heldHook)
	rejections := webhooktest.SampleCount(t, "apiserver_admission_webhook_rejection_count", heldHook)
	err, recorded := validate(t, p)
	if err == nil || !strings.Contains(err.Error(), `admission webhook "deny.example.com" denied the request: no`) {
		t.Fatalf("want the denial, got %v", err)
	}
	if len(recorded.Annotations()) != 0 || len(recorded.Warnings()) != 0 {
		t.Errorf("the cancelled call recorded annotations %v and warnings %q; want none", recorded.Annotations(), recorded.Warnings())
	}
	if got := webhooktest.SampleCount(t, "apiserver_admission_webhook_admission_duration_seconds", heldHook) - samples; got != 1 {
		t.Errorf("the cancelled call added %d duration samples, want 1", got)
	}
	if got := webhooktest.SampleCount(t, "apiserver_admission_webhook_rejection_count", heldHook) - rejections; got != 0 {
		t.Errorf("the cancelled call added %d rejections, want none", got)
	}
}
