package validating

import (
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// TestEnforcementModes: a webhook's denial (4xx or 5xx) is admitted, as a warning and/or an
// audit annotation and counted, when the webhook is in Warn and/or Audit, and so is a failed
// call under Fail (would_fail); a webhook not named, and Deny, are enforced as in stock. The
// plugin's harvest waits for its softened calls here.
func TestEnforcementModes(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		code := int32(http.StatusForbidden)
		if r.URL.Path == "/broken" {
			code = http.StatusInternalServerError
		}
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "pods need an owner label\nsecond line", Code: code}}
	})
	const annotation = webhook.WouldDenyValidatingPrefix + "round_0_index_0"
	tests := []struct {
		name           string
		hook           admissionregistrationv1.ValidatingWebhook
		modes          string
		wantErr        func(error) bool
		wantWarning    string
		wantAnnotation string
		wantCounted    string
		outcome        string
	}{
		{name: "Warn", hook: webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail), modes: "[Warn]",
			wantWarning: "deny.example.com would deny this request (enforcement mode Warn): pods need an owner label second line", wantCounted: "Warn"},
		{name: "Audit", hook: webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail), modes: "[Audit]",
			wantAnnotation: `{"configuration":"test-webhooks","webhook":"deny.example.com","mode":"Audit","outcome":"would_deny","message":"pods need an owner label\nsecond line"}`, wantCounted: "Audit"},
		{name: "Warn and Audit", hook: webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail), modes: "[Warn, Audit]",
			wantWarning:    "deny.example.com would deny this request (enforcement mode Warn+Audit): pods need an owner label second line",
			wantAnnotation: `{"configuration":"test-webhooks","webhook":"deny.example.com","mode":"Warn+Audit","outcome":"would_deny","message":"pods need an owner label\nsecond line"}`, wantCounted: "Warn+Audit"},
		{name: "a 5xx denial", hook: webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/broken"), admissionregistrationv1.Fail), modes: "[Warn, Audit]",
			wantWarning:    "deny.example.com would deny this request (enforcement mode Warn+Audit): pods need an owner label second line",
			wantAnnotation: `{"configuration":"test-webhooks","webhook":"deny.example.com","mode":"Warn+Audit","outcome":"would_deny","message":"pods need an owner label\nsecond line"}`, wantCounted: "Warn+Audit"},
		{name: "a failed call under Fail", hook: webhooktest.ValidatingWebhook("deny.example.com", webhooktest.ClosedClientConfig(t, "/deny"), admissionregistrationv1.Fail), modes: "[Warn, Audit]",
			wantWarning:    "deny.example.com would fail this request (enforcement mode Warn+Audit): its call failed; enforced, the request would be refused",
			wantAnnotation: `{"configuration":"test-webhooks","webhook":"deny.example.com","mode":"Warn+Audit","outcome":"would_fail","message":"its call failed; enforced, the request would be refused"}`, wantCounted: "Warn+Audit", outcome: webhook.OutcomeWouldFail},
		{name: "a failed call under Ignore", hook: webhooktest.ValidatingWebhook("deny.example.com", webhooktest.ClosedClientConfig(t, "/deny"), admissionregistrationv1.Ignore), modes: "[Warn, Audit]"},
		{name: "another webhook is enforced", hook: webhooktest.ValidatingWebhook("other.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail), modes: "[Warn, Audit]",
			wantErr: apierrors.IsForbidden},
		{name: "Deny is enforced", hook: webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail), modes: "[Deny]",
			wantErr: apierrors.IsForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			config := "circuitBreaker: {}\nenforcementModes:\n- {configuration: test-webhooks, webhook: deny.example.com, modes: " + tc.modes + "}\n"
			p := newInitialized(t, config, []admissionregistrationv1.ValidatingWebhook{tc.hook})
			if shadows := p.(*Plugin).settings.Shadows; shadows != nil {
				shadows.AwaitForTest()
			}
			outcome := webhook.OutcomeWouldDeny
			if tc.outcome != "" {
				outcome = tc.outcome
			}
			labels := map[string]string{"name": tc.hook.Name, "type": "validating", "mode": tc.wantCounted, "outcome": outcome}
			before := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", labels)
			err, recorded := validate(t, p)
			if shadows := p.(*Plugin).settings.Shadows; shadows != nil {
				// Counted once delivered: wait for the calls to end.
				shadows.Wait()
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("want admitted, got %v", err)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("want it refused as stock refuses it, got %v", err)
			}
			warnings := strings.Join(recorded.Warnings(), "\n")
			if tc.wantWarning != warnings {
				t.Errorf("warnings %q, want %q", warnings, tc.wantWarning)
			}
			if got := recorded.Annotations()[annotation]; got != tc.wantAnnotation {
				t.Errorf("annotation %s = %q, want %q", annotation, got, tc.wantAnnotation)
			}
			want := uint64(0)
			if tc.wantCounted != "" {
				want = 1
			}
			if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", labels) - before; got != want {
				t.Errorf("would-deny count rose by %d, want %d", got, want)
			}
		})
	}
}
