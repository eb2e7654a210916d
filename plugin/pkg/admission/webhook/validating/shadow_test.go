package validating

import (
	"context"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// TestSoftenedNeverHoldsTheRequest: a validating webhook in Warn+Audit that does not answer
// within the request's timeout, beside an enforced Fail webhook that admits at once: the
// request is admitted when the enforced one has answered. Its verdict is counted as late.
func TestSoftenedNeverHoldsTheRequest(t *testing.T) {
	release := make(chan struct{})
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if r.URL.Path == "/slow" {
			<-release
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "too late", Code: http.StatusForbidden}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	hooks := []admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook("slow.example.com", server.ClientConfig("/slow"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("enforced.example.com", server.ClientConfig("/enforced"), admissionregistrationv1.Fail),
	}
	thirty := int32(30)
	hooks[0].TimeoutSeconds = &thirty
	p := newInitialized(t, `circuitBreaker: {}
timeBudget: {}
enforcementModes:
- {configuration: test-webhooks, webhook: slow.example.com, modes: [Warn, Audit]}
`, hooks)
	late := map[string]string{"name": "slow.example.com", "type": "validating", "result": webhook.ShadowLate}
	lateBefore := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", late)
	ctx, cancel := context.WithTimeout(endpointsrequest.WithReceivedTimestamp(context.Background(), time.Now()), 2*time.Second)
	defer cancel()
	attr := webhooktesting.NewAttribute(webhooktest.Namespace, nil, false)
	if err := p.(admission.ValidationInterface).Validate(ctx, attr, webhooktesting.NewObjectInterfacesForTest()); err != nil {
		t.Fatalf("want admitted: a softened webhook never holds nor fails a request; got %v", err)
	}
	close(release)
	released = true
	p.(*Plugin).settings.Shadows.Wait()
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", late) - lateBefore; got != 1 {
		t.Errorf("late softened calls rose by %d, want 1", got)
	}
}
