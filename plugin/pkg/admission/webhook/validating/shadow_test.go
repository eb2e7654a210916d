package validating

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// TestSoftenedWaitIsBounded: a softened webhook beside an enforced one. Unbounded, the
// request waits for its verdict (which it could not have before the enforced call was made)
// and records it; with maxWait 0s it does not wait, and the verdict is counted as async; with
// a maxWait shorter than the call, the verdict is counted as late. Neither is recorded after
// the plugin returned.
func TestSoftenedWaitIsBounded(t *testing.T) {
	for _, tc := range webhooktest.WaitCases {
		t.Run(tc.Name, func(t *testing.T) {
			server, release := webhooktest.StartWaitServer(t, tc, "/softened", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
				return &admissionv1.AdmissionResponse{Allowed: true}
			})
			hooks := []admissionregistrationv1.ValidatingWebhook{
				webhooktest.ValidatingWebhook("softened.example.com", server.ClientConfig("/softened"), admissionregistrationv1.Fail),
				webhooktest.ValidatingWebhook("enforced.example.com", server.ClientConfig("/enforced"), admissionregistrationv1.Fail),
			}
			thirty := int32(30)
			hooks[0].TimeoutSeconds = &thirty
			p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: softened.example.com, modes: [Warn, Audit]"+tc.MaxWait+"}\n", hooks)
			labels := map[string]string{"name": "softened.example.com", "type": "validating", "result": tc.Result}
			before := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", labels)
			ctx, attr, recorder := webhooktest.Request(t)
			err := p.(admission.ValidationInterface).Validate(ctx, attr, webhooktesting.NewObjectInterfacesForTest())
			recorder.Returned()
			if err != nil {
				t.Fatalf("want admitted: a softened webhook never fails a request; got %v", err)
			}
			release()
			p.(*Plugin).settings.Shadows.Wait()
			if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", labels) - before; got != 1 {
				t.Errorf("shadow_calls_total{result=%q} rose by %d, want 1", tc.Result, got)
			}
			warned := slices.ContainsFunc(recorder.Warnings(), func(w string) bool {
				return strings.HasPrefix(w, "softened.example.com would deny this request (enforcement mode Warn+Audit): not yet")
			})
			if warned != tc.Recorded {
				t.Errorf("the verdict's warning recorded: %v, want %v (warnings %q)", warned, tc.Recorded, recorder.Warnings())
			}
		})
	}
}

// failingMatch is a match condition whose evaluation fails (a division by zero).
var failingMatch = []admissionregistrationv1.MatchCondition{{Name: "divides", Expression: "object.metadata.name.size() / 0 == 1"}}

// TestSoftenedMatchingErrorIsAWouldFail: a softened webhook under Fail whose match condition
// fails to evaluate refuses the request when enforced (upstream's 403); in Audit the request
// is admitted and the refusal is recorded as would_fail (the metric and the audit
// annotation), as a failed call's is.
func TestSoftenedMatchingErrorIsAWouldFail(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	hook := webhooktest.ValidatingWebhook("match-error.example.com", server.ClientConfig("/allow"), admissionregistrationv1.Fail)
	hook.MatchConditions = failingMatch
	hooks := []admissionregistrationv1.ValidatingWebhook{hook}

	if err, _ := validate(t, newInitialized(t, "circuitBreaker: {}\n", hooks)); !apierrors.IsForbidden(err) {
		t.Fatalf("enforced: want the match condition's error to refuse the request (403), got %v", err)
	}

	p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: match-error.example.com, modes: [Audit]}\n", hooks)
	labels := map[string]string{"name": "match-error.example.com", "type": "validating", "mode": "Audit", "outcome": webhook.OutcomeWouldFail}
	before := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", labels)
	err, recorded := validate(t, p)
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("in Audit: want admitted, got %v", err)
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", labels) - before; got != 1 {
		t.Errorf("would_fail count rose by %d, want 1", got)
	}
	annotation := recorded.Annotations()[webhook.WouldDenyValidatingPrefix+"round_0_index_0"]
	if !strings.Contains(annotation, `"outcome":"would_fail"`) {
		t.Errorf("audit annotation %q, want a would_fail", annotation)
	}
}

// TestSoftenedDenialIsNoRejection: a webhook in Audit that denies is not counted in
// upstream's rejection metrics (the request was not rejected); its latency is observed as an
// admitted call's.
func TestSoftenedDenialIsNoRejection(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no", Code: http.StatusForbidden}}
	})
	const name = "audit-deny.validating.example.com"
	hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook(name, server.ClientConfig("/deny"), admissionregistrationv1.Fail)}
	p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: "+name+", modes: [Audit]}\n", hooks)
	before := webhooktest.SoftenedCountsOf(t, name)
	err, _ := validate(t, p)
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("want admitted, got %v", err)
	}
	webhooktest.CheckDenialNotRejected(t, before, webhooktest.SoftenedCountsOf(t, name))
}

// TestSoftenedPanicFollowsThePolicy: a softened webhook whose call panics is failed open under
// Ignore, as upstream's validating dispatcher fails it open (no would_fail), and is a
// would_fail under Fail.
func TestSoftenedPanicFollowsThePolicy(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	for _, tc := range []struct {
		policy admissionregistrationv1.FailurePolicyType
		want   uint64
	}{
		{policy: admissionregistrationv1.Ignore, want: 0},
		{policy: admissionregistrationv1.Fail, want: 1},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			name := "panics-" + strings.ToLower(string(tc.policy)) + ".example.com"
			hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook(name, server.ClientConfig("/allow"), tc.policy)}
			r := runner(webhooktest.Ours(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: "+name+", modes: [Audit]}\n", true))
			p := r.Build(t)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			client, informer := r.Source(hooks, stop)
			// The resolver panics when the call's client is made.
			webhooktest.Initialize(t, p, webhooktest.Setup{
				Resolver: webhooktesting.Wrapper(webhooktesting.NewPanickingAuthenticationInfoResolver("boom")),
				Client:   client, Informer: informer, Stop: stop,
			})
			wouldFail := map[string]string{"name": name, "outcome": webhook.OutcomeWouldFail}
			before := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", wouldFail)
			err, _ := validate(t, p)
			p.(*Plugin).settings.Shadows.Wait()
			if err != nil {
				t.Fatalf("want admitted, got %v", err)
			}
			if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", wouldFail) - before; got != tc.want {
				t.Errorf("would_fail count rose by %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPreviewShowsUpstreamsRefusals: every refusal path of upstream's validating dispatcher
// (ours where the setting is ours) is a would_deny or would_fail in Audit, and nothing else is.
func TestPreviewShowsUpstreamsRefusals(t *testing.T) {
	webhooktest.RunRefusalCases(t, runner, true, func(p admission.Interface) *webhook.Shadows { return p.(*Plugin).settings.Shadows })
}

// TestSoftenedWaitIsWebhookLatency: the request's wait for a softened webhook is tracked as
// the validating webhooks' latency, as the call's time is once enforced, so the server's SLI
// latency (which subtracts it) does not grow by it.
func TestSoftenedWaitIsWebhookLatency(t *testing.T) {
	const answerAfter = 200 * time.Millisecond
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		time.Sleep(answerAfter) // the webhook's own latency
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook("tracked.example.com", server.ClientConfig("/allow"), admissionregistrationv1.Fail)}
	p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: tracked.example.com, modes: [Warn]}\n", hooks)
	ctx, attr, recorder := webhooktest.Request(t)
	ctx = endpointsrequest.WithLatencyTrackers(ctx)
	err := p.(admission.ValidationInterface).Validate(ctx, attr, webhooktesting.NewObjectInterfacesForTest())
	recorder.Returned()
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("want admitted, got %v", err)
	}
	trackers, _ := endpointsrequest.LatencyTrackersFrom(ctx)
	if got := trackers.ValidatingWebhookTracker.GetLatency(); got < answerAfter {
		t.Errorf("validating webhook latency tracked %v, want at least the wait for the softened call, %v", got, answerAfter)
	}
}

// TestSoftenedMatchingErrorWithMaxWait0sIsNotRecorded: with maxWait 0s a softened webhook's
// verdicts are in the metric and the log only, its failed matching's too (counted async).
func TestSoftenedMatchingErrorWithMaxWait0sIsNotRecorded(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	const name = "match-error-async.example.com"
	hook := webhooktest.ValidatingWebhook(name, server.ClientConfig("/allow"), admissionregistrationv1.Fail)
	hook.MatchConditions = failingMatch
	p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: "+name+", modes: [Warn, Audit], maxWait: 0s}\n",
		[]admissionregistrationv1.ValidatingWebhook{hook})
	wouldFail := map[string]string{"name": name, "outcome": webhook.OutcomeWouldFail}
	async := map[string]string{"name": name, "result": webhook.ShadowAsync}
	beforeFail, beforeAsync := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", wouldFail), webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", async)
	err, recorded := validate(t, p)
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("want admitted, got %v", err)
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", wouldFail) - beforeFail; got != 1 {
		t.Errorf("would_fail count rose by %d, want 1", got)
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", async) - beforeAsync; got != 1 {
		t.Errorf("shadow_calls_total{result=async} rose by %d, want 1", got)
	}
	if len(recorded.Warnings()) != 0 || len(recorded.Annotations()) != 0 {
		t.Errorf("recorded on the request: warnings %q, annotations %v; want none", recorded.Warnings(), recorded.Annotations())
	}
}
