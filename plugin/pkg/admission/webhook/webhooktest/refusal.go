package webhooktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// RefusalCase is one way an enforced webhook can refuse a request, or a near miss that must
// not: the preview (the webhook in Audit) must record a would_deny or would_fail exactly when
// the enforced baseline refused the request.
type RefusalCase struct {
	Name string
	// Path is the webhook's path on the refusal server ("": a port that refuses connections).
	Path   string
	Policy admissionregistrationv1.FailurePolicyType
	// SideEffects is the webhook's ("": None).
	SideEffects admissionregistrationv1.SideEffectClass
	Request     RequestSpec
	// Settings are dispatch settings of ours (YAML) beside the webhook's Audit mode.
	Settings string
	// Warmups are requests sent through the previewing plugin before the judged one (to
	// open its breaker).
	Warmups int
	// OursEnforced: the baseline is our dispatch with Settings, for a setting upstream has
	// no counterpart of (the time budget); otherwise it is upstream's own plugin.
	OursEnforced bool
	// Refused is what the baseline does with the request: refuse it, or answer past the
	// request's deadline (the server has answered 504 by then). Checked on every run.
	Refused bool
}

// slowAnswer is how long the refusal server's /slow path takes to allow: past the
// one-second deadline and time budget of the cases that use it.
const slowAnswer = 1500 * time.Millisecond

// RefusalCases are the refusal paths of a webhook call besides a plain denial: a dry run to
// a webhook with side effects, responses that are not an answer, an open breaker, the
// request's deadline, and the time budget.
var RefusalCases = []RefusalCase{
	{Name: "allowed", Path: "/allow", Policy: admissionregistrationv1.Fail},
	{Name: "denied, under Ignore", Path: "/deny", Policy: admissionregistrationv1.Ignore, Refused: true},
	{Name: "dry run to a webhook with side effects, under Ignore", Path: "/allow", Policy: admissionregistrationv1.Ignore,
		SideEffects: admissionregistrationv1.SideEffectClassUnknown, Request: RequestSpec{DryRun: true}, Refused: true},
	{Name: "dry run to a webhook with none on dry run", Path: "/allow", Policy: admissionregistrationv1.Fail,
		SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun, Request: RequestSpec{DryRun: true}},
	{Name: "unreachable, under Fail", Policy: admissionregistrationv1.Fail, Refused: true},
	{Name: "unreachable, under Ignore", Policy: admissionregistrationv1.Ignore},
	{Name: "response not JSON, under Fail", Path: "/not-json", Policy: admissionregistrationv1.Fail, Refused: true},
	{Name: "response not JSON, under Ignore", Path: "/not-json", Policy: admissionregistrationv1.Ignore},
	{Name: "response to another request's UID, under Fail", Path: "/wrong-uid", Policy: admissionregistrationv1.Fail, Refused: true},
	{Name: "review without a response, under Fail", Path: "/no-response", Policy: admissionregistrationv1.Fail, Refused: true},
	{Name: "HTTP 500, under Fail", Path: "/status-500", Policy: admissionregistrationv1.Fail, Refused: true},
	{Name: "HTTP 500, under Ignore", Path: "/status-500", Policy: admissionregistrationv1.Ignore},
	{Name: "open breaker, under Fail", Policy: admissionregistrationv1.Fail, Warmups: 1, Refused: true,
		Settings: "circuitBreaker: {failureThreshold: 1, initialBackoff: 10m, maxBackoff: 10m}\n"},
	{Name: "open breaker, under Ignore", Policy: admissionregistrationv1.Ignore, Warmups: 1,
		Settings: "circuitBreaker: {failureThreshold: 1, initialBackoff: 10m, maxBackoff: 10m}\n"},
	{Name: "deadline passes during the call, under Fail", Path: "/slow", Policy: admissionregistrationv1.Fail,
		Request: RequestSpec{Timeout: time.Second}, Refused: true},
	{Name: "deadline passes during the call, under Ignore", Path: "/slow", Policy: admissionregistrationv1.Ignore,
		Request: RequestSpec{Timeout: time.Second}, Refused: true},
	{Name: "time budget spent, under Fail", Path: "/allow", Policy: admissionregistrationv1.Fail, OursEnforced: true,
		Settings: "timeBudget: {maxDuration: 1s}\n", Request: RequestSpec{ReceivedAgo: 2 * time.Second}, Refused: true},
	{Name: "time budget spent, under Ignore", Path: "/allow", Policy: admissionregistrationv1.Ignore, OursEnforced: true,
		Settings: "timeBudget: {maxDuration: 1s}\n", Request: RequestSpec{ReceivedAgo: 2 * time.Second}},
	{Name: "time budget ends during the call, under Fail", Path: "/slow", Policy: admissionregistrationv1.Fail, OursEnforced: true,
		Settings: "timeBudget: {maxDuration: 1s}\n", Refused: true},
}

// startRefusalServer serves RefusalCases' paths.
func startRefusalServer(t testing.TB) *ReviewServer {
	t.Helper()
	server := webhooktesting.NewTestServerWithHandler(t, func(w http.ResponseWriter, r *http.Request) {
		review, ok := readReview(w, r)
		if !ok {
			return
		}
		response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		switch r.URL.Path {
		case "/deny":
			response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Result: &metav1.Status{Message: "no", Code: http.StatusForbidden}}
		case "/not-json":
			_, _ = w.Write([]byte("<html>busy</html>"))
			return
		case "/wrong-uid":
			response.UID = review.Request.UID + "-other"
		case "/no-response":
			response = nil
		case "/status-500":
			http.Error(w, "lookup failed", http.StatusInternalServerError)
			return
		case "/slow":
			select {
			case <-time.After(slowAnswer):
			case <-r.Context().Done():
				return
			}
		}
		review.Request, review.Response = nil, response
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	})
	server.StartTLS()
	t.Cleanup(server.Close)
	return &ReviewServer{URL: mustParse(t, server.URL)}
}

// RunRefusalCases runs every RefusalCase through the enforced baseline (upstream's plugin,
// or ours where the case says) and through our plugin, built by runner, with the webhook in
// Audit; shadows are the latter's softened calls. The preview must admit the request before
// its deadline, and count a would_deny or would_fail exactly when the baseline refused.
func RunRefusalCases(t *testing.T, runner func(Mode) Runner, validating bool, shadows func(admission.Interface) *webhook.Shadows) {
	server := startRefusalServer(t)
	for i, tc := range RefusalCases {
		t.Run(tc.Name, func(t *testing.T) {
			name := fmt.Sprintf("refusal-%d.example.com", i)
			cc := server.ClientConfig(tc.Path)
			if tc.Path == "" {
				cc = ClosedClientConfig(t, "/")
			}
			hook := ValidatingWebhook(name, cc, tc.Policy)
			if tc.SideEffects != "" {
				sideEffects := tc.SideEffects
				hook.SideEffects = &sideEffects
			}
			hooks := []admissionregistrationv1.ValidatingWebhook{hook}

			baseline := Mode{}
			if tc.OursEnforced {
				baseline = Ours(t, tc.Settings, validating)
			}
			enforced := runner(baseline)
			ctx, attr, _ := RequestOf(t, tc.Request)
			err := enforced.Call(ctx, enforced.Initialized(t, hooks), attr)
			if refused := err != nil || ctx.Err() != nil; refused != tc.Refused {
				t.Fatalf("enforced (%v), refused: %v (%v); the table says %v: fix the table", baseline.Name, refused, err, tc.Refused)
			}

			previewing := runner(Ours(t, tc.Settings+"enforcementModes:\n- {configuration: test-webhooks, webhook: "+name+", modes: [Audit]}\n", validating))
			p := previewing.Initialized(t, hooks)
			for range tc.Warmups {
				ctx, attr, _ := RequestOf(t, tc.Request)
				if err := previewing.Call(ctx, p, attr); err != nil {
					t.Fatalf("warm-up request refused in Audit: %v", err)
				}
			}
			shadows(p).Wait()
			count := func() uint64 {
				return SampleCount(t, "portcullis_admission_webhook_would_deny_total", map[string]string{"name": name, "outcome": webhook.OutcomeWouldDeny}) +
					SampleCount(t, "portcullis_admission_webhook_would_deny_total", map[string]string{"name": name, "outcome": webhook.OutcomeWouldFail})
			}
			before := count()
			ctx, attr, recorder := RequestOf(t, tc.Request)
			err = previewing.Call(ctx, p, attr)
			recorder.Returned()
			if err != nil {
				t.Fatalf("in Audit: want admitted, got %v", err)
			}
			if ctx.Err() != nil {
				t.Fatalf("in Audit: the request was held past its deadline")
			}
			shadows(p).Wait()
			if previewed := count() > before; previewed != tc.Refused {
				t.Errorf("the preview counted a would_deny or would_fail: %v; enforced, the request was refused: %v", previewed, tc.Refused)
			}
		})
	}
}
