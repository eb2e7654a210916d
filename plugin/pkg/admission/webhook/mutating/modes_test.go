package mutating

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// annotationPatch sets the object's annotations to annotations.
func annotationPatch(annotations map[string]string) *admissionv1.AdmissionResponse {
	value, _ := json.Marshal(annotations)
	jsonPatch := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch,
		Patch: []byte(`[{"op":"add","path":"/metadata/annotations","value":` + string(value) + `}]`)}
}

// objectAnnotations are the annotations of a review's object.
func objectAnnotations(request *admissionv1.AdmissionRequest) map[string]string {
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(request.Object.Raw, &meta)
	if meta.Metadata.Annotations == nil {
		return map[string]string{}
	}
	return meta.Metadata.Annotations
}

// TestShadowWebhooks: mutating webhooks in Warn and/or Audit are called, and nothing they
// answer reaches the object or the verdict: a patch is recorded (audit annotation, warning
// with its paths, count), a denial is recorded, a failed call under Fail is recorded as
// would_fail. The plugin's harvest waits for its shadows here, so what they record on the
// request is asserted; TestShadowNeverHoldsTheRequest proves a server's never waits.
func TestShadowWebhooks(t *testing.T) {
	server := webhooktest.StartReviewServer(t, func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if r.URL.Path == "/deny" {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "no sidecar for you", Code: http.StatusInternalServerError}}
		}
		return annotationPatch(map[string]string{"injected": "yes"})
	})
	hooks := []admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook("patch.example.com", server.ClientConfig("/patch"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("deny.example.com", server.ClientConfig("/deny"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("dead.example.com", webhooktest.ClosedClientConfig(t, "/dead"), admissionregistrationv1.Fail),
	}
	p := newInitialized(t, `enforcementModes:
- {configuration: test-webhooks, webhook: patch.example.com, modes: [Warn, Audit]}
- {configuration: test-webhooks, webhook: deny.example.com, modes: [Warn]}
- {configuration: test-webhooks, webhook: dead.example.com, modes: [Audit]}
`, hooks)
	p.(*Plugin).settings.Shadows.AwaitForTest()
	failLabels := map[string]string{"name": "dead.example.com", "type": "admit", "mode": "Audit", "outcome": webhook.OutcomeWouldFail}
	failsBefore := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", failLabels)
	patchLabels := map[string]string{"name": "patch.example.com", "type": "admit", "mode": "Warn+Audit", "outcome": webhook.OutcomeWouldPatch}
	denyLabels := map[string]string{"name": "deny.example.com", "type": "admit", "mode": "Warn", "outcome": webhook.OutcomeWouldDeny}
	patchesBefore := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", patchLabels)
	deniesBefore := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", denyLabels)

	attr, err, recorded := admit(t, p)
	// Counted once delivered: wait for the calls to end.
	p.(*Plugin).settings.Shadows.Wait()
	if err != nil {
		t.Fatalf("want admitted: shadows never fail a request; got %v", err)
	}
	if got := attr.GetObject().(metav1.Object).GetAnnotations(); got["injected"] != "" {
		t.Errorf("a shadow's patch was applied: annotations %v", got)
	}
	wantWarnings := []string{
		"patch.example.com would change /metadata/annotations (enforcement mode Warn+Audit: its patch is not applied)",
		"deny.example.com would deny this request (enforcement mode Warn): no sidecar for you",
	}
	if got := recorded.Warnings(); strings.Join(got, "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("warnings %q, want %q", got, wantWarnings)
	}
	annotations := recorded.Annotations()
	wantPatch := `{"configuration":"test-webhooks","webhook":"patch.example.com","mode":"Warn+Audit","patch":[{"op":"add","path":"/metadata/annotations","value":{"injected":"yes"}}],"patchType":"JSONPatch"}`
	if got := annotations[webhook.ShadowPatchPrefix+"round_0_index_0"]; got != wantPatch {
		t.Errorf("shadow patch annotation %q, want %q", got, wantPatch)
	}
	wantFail := `{"configuration":"test-webhooks","webhook":"dead.example.com","mode":"Audit","outcome":"would_fail","message":"its call failed; enforced, the request would be refused"}`
	if got := annotations[webhook.WouldDenyMutatingPrefix+"round_0_index_2"]; got != wantFail {
		t.Errorf("would-fail annotation %q, want %q", got, wantFail)
	}
	for key := range annotations {
		if strings.HasPrefix(key, "patch.webhook.admission.k8s.io/") || strings.HasPrefix(key, "failed-open.") || key == webhook.WouldDenyMutatingPrefix+"round_0_index_1" {
			t.Errorf("annotation %s recorded: a shadow's patch is not applied, it does not fail open, and the Warn-only denial is not audited", key)
		}
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", failLabels) - failsBefore; got != 1 {
		t.Errorf("would_fail count rose by %d, want 1", got)
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", patchLabels) - patchesBefore; got != 1 {
		t.Errorf("would_patch count rose by %d, want 1", got)
	}
	if got := webhooktest.SampleCount(t, "portcullis_admission_webhook_would_deny_total", denyLabels) - deniesBefore; got != 1 {
		t.Errorf("would_deny count rose by %d, want 1", got)
	}
}

// TestIdempotencyProbe: with every changing call probed, a webhook that changes its own
// output again is reported not idempotent, one that leaves it be is reported idempotent, and
// one with side effects is never probed. Probes are dry runs, and change nothing of the
// request.
func TestIdempotencyProbe(t *testing.T) {
	var mu sync.Mutex
	dryRuns := map[string]int{}
	server := webhooktest.StartReviewServer(t, func(r *http.Request, request *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if request.DryRun != nil && *request.DryRun {
			mu.Lock()
			dryRuns[r.URL.Path]++
			mu.Unlock()
		}
		annotations := objectAnnotations(request)
		switch r.URL.Path {
		case "/counter":
			// Not idempotent: every call counts once more.
			n, _ := strconv.Atoi(annotations["count"])
			annotations["count"] = strconv.Itoa(n + 1)
		default:
			annotations[strings.TrimPrefix(r.URL.Path, "/")] = "yes"
		}
		return annotationPatch(annotations)
	})
	hooks := []admissionregistrationv1.ValidatingWebhook{
		webhooktest.ValidatingWebhook("counter.example.com", server.ClientConfig("/counter"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("fixed.example.com", server.ClientConfig("/fixed"), admissionregistrationv1.Fail),
		webhooktest.ValidatingWebhook("side-effects.example.com", server.ClientConfig("/side-effects"), admissionregistrationv1.Fail),
	}
	some := admissionregistrationv1.SideEffectClassSome
	hooks[2].SideEffects = &some
	p := newInitialized(t, "idempotencyProbe: {oneIn: 1}\n", hooks)
	count := func(name, result string) uint64 {
		return webhooktest.SampleCount(t, webhook.ProbesMetric, map[string]string{"name": name, "result": result})
	}
	before := map[string]uint64{}
	for _, name := range []string{"counter.example.com", "fixed.example.com", "side-effects.example.com"} {
		for _, result := range []string{webhook.ProbeIdempotent, webhook.ProbeNotIdempotent} {
			before[name+result] = count(name, result)
		}
	}

	attr, err, _ := admit(t, p)
	if err != nil {
		t.Fatal(err)
	}
	p.(*Plugin).settings.Prober.Wait()
	if got, want := attr.GetObject().(metav1.Object).GetAnnotations(), map[string]string{"count": "1", "fixed": "yes", "side-effects": "yes"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("object's annotations %v, want %v: probes change nothing of the request", got, want)
	}
	for _, tc := range []struct {
		name                           string
		idempotent, notIdempotent, dry int
	}{
		{name: "counter.example.com", notIdempotent: 1, dry: 1},
		{name: "fixed.example.com", idempotent: 1, dry: 1},
		{name: "side-effects.example.com"},
	} {
		if got := count(tc.name, webhook.ProbeIdempotent) - before[tc.name+webhook.ProbeIdempotent]; got != uint64(tc.idempotent) {
			t.Errorf("%s: idempotent count rose by %d, want %d", tc.name, got, tc.idempotent)
		}
		if got := count(tc.name, webhook.ProbeNotIdempotent) - before[tc.name+webhook.ProbeNotIdempotent]; got != uint64(tc.notIdempotent) {
			t.Errorf("%s: not_idempotent count rose by %d, want %d", tc.name, got, tc.notIdempotent)
		}
		mu.Lock()
		if got := dryRuns["/"+strings.TrimSuffix(tc.name, ".example.com")]; got != tc.dry {
			t.Errorf("%s: %d dry-run calls, want %d (the probe)", tc.name, got, tc.dry)
		}
		mu.Unlock()
	}
}
