package mutating

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// TestShadowWaitIsBounded: a shadow, then an enforced webhook that patches. The request
// always gets the enforced patch (the shadow spends none of its time); unbounded, it waits
// for the shadow's verdict (which could not come before the enforced call was made) and
// records it; with maxWait 0s it does not wait (async); with a maxWait shorter than the call
// the verdict is late. Nothing is recorded after the plugin returned. (Here, the plugin alone,
// it harvests at its own end; in a server, at the chain's: HarvestPoint.)
func TestShadowWaitIsBounded(t *testing.T) {
	for _, tc := range webhooktest.WaitCases {
		t.Run(tc.Name, func(t *testing.T) {
			server, release := webhooktest.StartWaitServer(t, tc, "/shadow", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
				jsonPatch := admissionv1.PatchTypeJSONPatch
				return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/metadata/annotations","value":{"enforced":"yes"}}]`)}
			})
			hooks := []admissionregistrationv1.ValidatingWebhook{
				webhooktest.ValidatingWebhook("shadow.example.com", server.ClientConfig("/shadow"), admissionregistrationv1.Fail),
				webhooktest.ValidatingWebhook("enforced.example.com", server.ClientConfig("/enforced"), admissionregistrationv1.Fail),
			}
			thirty := int32(30)
			hooks[0].TimeoutSeconds = &thirty
			p := newInitialized(t, "timeBudget: {}\nenforcementModes:\n- {configuration: test-webhooks, webhook: shadow.example.com, modes: [Warn, Audit]"+tc.MaxWait+"}\n", hooks)
			labels := map[string]string{"name": "shadow.example.com", "type": "admit", "result": tc.Result}
			before := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", labels)
			ctx, attr, recorder := webhooktest.Request(t)
			err := p.(admission.MutationInterface).Admit(ctx, attr, webhooktesting.NewObjectInterfacesForTest())
			recorder.Returned()
			if err != nil {
				t.Fatalf("want admitted: a shadow never fails a request; got %v", err)
			}
			if got := attr.GetObject().(metav1.Object).GetAnnotations()["enforced"]; got != "yes" {
				t.Errorf("the enforced webhook's patch is missing: annotations %v", attr.GetObject().(metav1.Object).GetAnnotations())
			}
			release()
			p.(*Plugin).settings.Shadows.Wait()
			if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", labels) - before; got != 1 {
				t.Errorf("shadow_calls_total{result=%q} rose by %d, want 1", tc.Result, got)
			}
			warned := slices.ContainsFunc(recorder.Warnings(), func(w string) bool {
				return strings.HasPrefix(w, "shadow.example.com would deny this request (enforcement mode Warn+Audit): not yet")
			})
			if warned != tc.Recorded {
				t.Errorf("the verdict's warning recorded: %v, want %v (warnings %q)", warned, tc.Recorded, recorder.Warnings())
			}
		})
	}
}

// changes the object is recorded as would_patch.
func TestShadowVerdictsMatchEnforcement(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		jsonPatch, other := admissionv1.PatchTypeJSONPatch, admissionv1.PatchType("MergePatch")
		switch r.URL.Path {
		case "/deny":
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no", Code: http.StatusForbidden}}
		case "/deny-500":
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no", Code: http.StatusInternalServerError}}
		case "/unappliable":
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/spec/nothing/here","value":"x"}]`)}
		case "/undecodable":
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`{"not":"a patch"}`)}
		case "/other-type":
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &other, Patch: []byte(`{"metadata":{"labels":{"x":"y"}}}`)}
		case "/patch":
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/metadata/annotations","value":{"x":"y"}}]`)}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	for _, tc := range []struct {
		name, path string
		policy     admissionregistrationv1.FailurePolicyType
		dead       bool
		delete     bool
		// want is the outcome recorded ("": none).
		want string
	}{
		{name: "denial", path: "/deny", policy: admissionregistrationv1.Fail, want: webhook.OutcomeWouldDeny},
		{name: "denial with a 5xx code", path: "/deny-500", policy: admissionregistrationv1.Ignore, want: webhook.OutcomeWouldDeny},
		{name: "failed call under Fail", path: "/dead", dead: true, policy: admissionregistrationv1.Fail, want: webhook.OutcomeWouldFail},
		{name: "failed call under Ignore", path: "/dead", dead: true, policy: admissionregistrationv1.Ignore},
		{name: "patch that does not apply, under Ignore", path: "/unappliable", policy: admissionregistrationv1.Ignore, want: webhook.OutcomeWouldFail},
		{name: "undecodable patch under Fail", path: "/undecodable", policy: admissionregistrationv1.Fail, want: webhook.OutcomeWouldFail},
		{name: "undecodable patch under Ignore", path: "/undecodable", policy: admissionregistrationv1.Ignore},
		{name: "patch type other than JSONPatch under Fail", path: "/other-type", policy: admissionregistrationv1.Fail, want: webhook.OutcomeWouldFail},
		{name: "patch type other than JSONPatch under Ignore", path: "/other-type", policy: admissionregistrationv1.Ignore},
		{name: "patch on DELETE, under Ignore", path: "/patch", policy: admissionregistrationv1.Ignore, delete: true, want: webhook.OutcomeWouldFail},
		{name: "patch that changes the object", path: "/patch", policy: admissionregistrationv1.Fail, want: webhook.OutcomeWouldPatch},
		{name: "allowed", path: "/allow", policy: admissionregistrationv1.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := server.ClientConfig(tc.path)
			if tc.dead {
				cc = webhooktest.ClosedClientConfig(t, tc.path)
			}
			hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook("hook.example.com", cc, tc.policy)}
			request := func(p admission.Interface) (error, *webhooktest.Recorder) {
				ctx, attr, recorded := webhooktest.Request(t)
				if tc.delete {
					attr = deleteAttributes(t, attr)
				}
				err := p.(admission.MutationInterface).Admit(ctx, attr, webhooktesting.NewObjectInterfacesForTest())
				recorded.Returned()
				return err, recorded
			}
			enforcedErr, _ := request(newInitialized(t, "circuitBreaker: {}\n", hooks))
			shadowed := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: hook.example.com, modes: [Audit]}\n", hooks)
			shadowed.(*Plugin).settings.Shadows.AwaitForTest()
			outcomes := []string{webhook.OutcomeWouldDeny, webhook.OutcomeWouldFail, webhook.OutcomeWouldPatch}
			count := func(outcome string) uint64 {
				return webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", map[string]string{"name": "hook.example.com", "type": "admit", "mode": "Audit", "outcome": outcome})
			}
			before := map[string]uint64{}
			for _, o := range outcomes {
				before[o] = count(o)
			}
			shadowErr, recorded := request(shadowed)
			shadowed.(*Plugin).settings.Shadows.Wait()
			if shadowErr != nil {
				t.Fatalf("the shadow refused the request: %v", shadowErr)
			}
			refusal := tc.want == webhook.OutcomeWouldDeny || tc.want == webhook.OutcomeWouldFail
			if refused := enforcedErr != nil; refused != refusal {
				t.Fatalf("enforced, refused: %v (%v); the table says %v: fix the table", refused, enforcedErr, refusal)
			}
			got := ""
			for _, o := range outcomes {
				if n := count(o) - before[o]; n > 0 {
					got += o
				}
			}
			annotations := recorded.Annotations()
			if !tc.delete {
				// The audit annotation says the same.
				recordedOutcome := ""
				if value, ok := annotations[webhook.WouldDenyMutatingPrefix+"round_0_index_0"]; ok {
					var record struct{ Outcome string }
					if err := json.Unmarshal([]byte(value), &record); err != nil {
						t.Fatal(err)
					}
					recordedOutcome = record.Outcome
				}
				if _, ok := annotations[webhook.ShadowPatchPrefix+"round_0_index_0"]; ok {
					recordedOutcome += webhook.OutcomeWouldPatch
				}
				if recordedOutcome != tc.want {
					t.Errorf("audit annotation's outcome %q, want %q", recordedOutcome, tc.want)
				}
			}
			if got != tc.want {
				t.Errorf("would_deny_total counted outcome %q, want %q (enforced: %v); annotations %v", got, tc.want, enforcedErr, annotations)
			}
		})
	}
}

// deleteAttributes are a DELETE of attr's object: no object, the old object attr's.
func deleteAttributes(t *testing.T, attr admission.Attributes) admission.Attributes {
	t.Helper()
	return admission.NewAttributesRecord(nil, attr.GetObject(), attr.GetKind(), attr.GetNamespace(), attr.GetName(), attr.GetResource(), attr.GetSubresource(),
		admission.Delete, &metav1.DeleteOptions{}, false, attr.GetUserInfo())
}

// TestShadowMatchingErrorIsAWouldFail: a mutating webhook under Fail whose match condition
// fails to evaluate refuses the request when enforced (upstream's 403); as a shadow in Audit
// the request is admitted and the refusal is recorded as would_fail, as a failed call's is.
func TestShadowMatchingErrorIsAWouldFail(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	const name = "match-error.mutating.example.com"
	hooks := webhooktesting.ConvertToMutatingWebhooks([]admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook(name, server.ClientConfig("/allow"), admissionregistrationv1.Fail)})
	// A division by zero: the evaluation fails.
	hooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "divides", Expression: "object.metadata.name.size() / 0 == 1"}}
	build := func(config string) admission.Interface {
		r := runner(webhooktest.Ours(t, config, false))
		p := r.Build(t)
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		client, informer := webhooktesting.NewFakeMutatingDataSource(webhooktest.Namespace, hooks, stop)
		webhooktest.Initialize(t, p, webhooktest.Setup{
			Resolver: webhooktesting.Wrapper(webhooktesting.NewAuthenticationInfoResolver(new(int32))),
			Client:   client, Informer: informer, Stop: stop,
		})
		return p
	}
	if _, err, _ := admit(t, build("circuitBreaker: {}\n")); !apierrors.IsForbidden(err) {
		t.Fatalf("enforced: want the match condition's error to refuse the request (403), got %v", err)
	}
	p := build("enforcementModes:\n- {configuration: test-webhooks, webhook: " + name + ", modes: [Audit]}\n")
	labels := map[string]string{"name": name, "type": "admit", "mode": "Audit", "outcome": webhook.OutcomeWouldFail}
	before := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", labels)
	_, err, recorded := admit(t, p)
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("in Audit: want admitted, got %v", err)
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", labels) - before; got != 1 {
		t.Errorf("would_fail count rose by %d, want 1", got)
	}
	annotation := recorded.Annotations()[webhook.WouldDenyMutatingPrefix+"round_0_index_0"]
	if !strings.Contains(annotation, `"outcome":"would_fail"`) {
		t.Errorf("audit annotation %q, want a would_fail", annotation)
	}
}

// TestShadowDenialIsNoRejection: a shadow in Audit that denies is not counted in upstream's
// rejection metrics (the request was not rejected); its latency is observed as an admitted
// call's.
func TestShadowDenialIsNoRejection(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no", Code: http.StatusForbidden}}
	})
	const name = "audit-deny.mutating.example.com"
	hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook(name, server.ClientConfig("/deny"), admissionregistrationv1.Fail)}
	p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: "+name+", modes: [Audit]}\n", hooks)
	before := webhooktest.SoftenedCountsOf(t, name)
	_, err, _ := admit(t, p)
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("want admitted, got %v", err)
	}
	webhooktest.CheckDenialNotRejected(t, before, webhooktest.SoftenedCountsOf(t, name))
}

// TestPreviewShowsUpstreamsRefusals: every refusal path of upstream's mutating dispatcher
// (ours where the setting is ours) is a would_deny or would_fail in Audit, and nothing else is.
func TestPreviewShowsUpstreamsRefusals(t *testing.T) {
	webhooktest.RunRefusalCases(t, runner, false, func(p admission.Interface) *webhook.Shadows { return p.(*Plugin).settings.Shadows })
}

// admitAll is a validating plugin that admits everything: the chain's last.
type admitAll struct{ *admission.Handler }

func (admitAll) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// TestDiscardedTryIsNotRecorded: an update whose first try met a conflict after its mutating
// phase (a stale cached object) is tried again by the server, in the same request: the first
// try's shadow verdict, never harvested, is counted refused when the second try begins, and
// only the second try's is recorded on the request.
func TestDiscardedTryIsNotRecorded(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no", Code: http.StatusForbidden}}
	})
	const name = "retried.mutating.example.com"
	hooks := []admissionregistrationv1.ValidatingWebhook{webhooktest.ValidatingWebhook(name, server.ClientConfig("/deny"), admissionregistrationv1.Fail)}
	p := newInitialized(t, "enforcementModes:\n- {configuration: test-webhooks, webhook: "+name+", modes: [Audit]}\n", hooks)
	point := &webhook.HarvestPoint{}
	chain := admission.NewChainHandler(point.Decorate(p, PluginName), point.Decorate(admitAll{admission.NewHandler(admission.Create)}, "AdmitAll"))
	counted := func(result string) uint64 {
		return webhooktest.SampleCount(t, "portcullis_admission_webhook_shadow_calls_total", map[string]string{"name": name, "result": result})
	}
	refused, inTime := counted(webhook.ShadowRefused), counted(webhook.ShadowInTime)
	var recorders []*webhooktest.Recorder
	webhook.WithDeferredShadows(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		for try := range 2 {
			ctx, attr, recorder := webhooktest.RequestOf(t, webhooktest.RequestSpec{Parent: r.Context()})
			recorders = append(recorders, recorder)
			if err := chain.Admit(ctx, attr, webhooktesting.NewObjectInterfacesForTest()); err != nil {
				t.Fatalf("try %d: %v", try, err)
			}
			if try == 0 {
				// The conflict: the try ends between the phases.
				continue
			}
			if err := chain.Validate(ctx, attr, webhooktesting.NewObjectInterfacesForTest()); err != nil {
				t.Fatalf("try %d: %v", try, err)
			}
		}
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/", nil))
	p.(*Plugin).settings.Shadows.Wait()
	if got := counted(webhook.ShadowRefused) - refused; got != 1 {
		t.Errorf("verdicts counted refused: %d, want 1 (the discarded try's)", got)
	}
	if got := counted(webhook.ShadowInTime) - inTime; got != 1 {
		t.Errorf("verdicts counted in_time: %d, want 1 (the kept try's)", got)
	}
	for try, recorder := range recorders {
		_, recorded := recorder.Annotations()[webhook.WouldDenyMutatingPrefix+"round_0_index_0"]
		if recorded != (try == 1) {
			t.Errorf("try %d: verdict recorded on it: %v, want %v", try, recorded, try == 1)
		}
	}
}
