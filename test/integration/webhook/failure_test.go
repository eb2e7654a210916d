package webhook

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slowCap bounds how long the slow webhook holds a call the apiserver has given up on.
const slowCap = 10 * time.Second

// failureMode is one way a webhook call can fail.
type failureMode struct {
	name string
	// reason is what the refusal under failurePolicy Fail says about the failure.
	reason string
	// reachesHandler says whether the webhook's handler sees the call at all.
	reachesHandler bool
	// mutatingOnly marks modes only a mutating webhook can exhibit.
	mutatingOnly bool
	// respond writes the failing answer; mutating says whether the webhook is mutating,
	// so that answers that would otherwise be accepted carry a patch.
	respond func(w http.ResponseWriter, r *http.Request, c *call, mutating bool)
}

const mutatedLabel = "mutated"

// answer is the review a well-behaved webhook would send: allowed, and for a mutating
// webhook a patch that labels the object mutatedLabel.
func answer(c *call, mutating bool) *admissionv1.AdmissionReview {
	response := &admissionv1.AdmissionResponse{UID: c.Request.UID, Allowed: true}
	if mutating {
		response = patched(setLabel(c.objectMeta(), mutatedLabel, "yes"))
		response.UID = c.Request.UID
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: response,
	}
}

var failureModes = []failureMode{
	{name: "connection-refused", reason: "connection refused"},
	{
		name: "timeout", reason: "context deadline exceeded", reachesHandler: true,
		respond: func(w http.ResponseWriter, r *http.Request, c *call, mutating bool) {
			timer := time.NewTimer(slowCap)
			defer timer.Stop()
			select {
			case <-r.Context().Done():
			case <-timer.C:
			}
			writeJSON(w, answer(c, mutating))
		},
	},
	{
		name: "http-500", reason: `an error on the server ("the webhook broke")`, reachesHandler: true,
		respond: func(w http.ResponseWriter, _ *http.Request, _ *call, _ bool) {
			http.Error(w, "the webhook broke", http.StatusInternalServerError)
		},
	},
	{
		name: "not-json", reason: "json parse error", reachesHandler: true,
		respond: func(w http.ResponseWriter, _ *http.Request, _ *call, _ bool) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("this is not JSON"))
		},
	},
	{
		name: "wrong-uid", reason: "expected response.uid", reachesHandler: true,
		respond: func(w http.ResponseWriter, _ *http.Request, c *call, mutating bool) {
			review := answer(c, mutating)
			review.Response.UID = "not-the-request-uid"
			writeJSON(w, review)
		},
	},
	{
		name: "wrong-api-version", reason: "v1beta1.AdmissionReview", reachesHandler: true,
		respond: func(w http.ResponseWriter, _ *http.Request, c *call, mutating bool) {
			// A v1beta1 review in answer to a v1 one.
			review := answer(c, mutating)
			review.APIVersion = "admission.k8s.io/v1beta1"
			writeJSON(w, review)
		},
	},
	{
		name: "wrong-kind", reason: "AdmissionResponse", reachesHandler: true,
		respond: func(w http.ResponseWriter, _ *http.Request, c *call, mutating bool) {
			review := answer(c, mutating)
			review.Kind = "AdmissionResponse"
			writeJSON(w, review)
		},
	},
	{
		name: "invalid-patch", reason: "undecodable patch", reachesHandler: true, mutatingOnly: true,
		respond: func(w http.ResponseWriter, _ *http.Request, c *call, _ bool) {
			review := answer(c, true)
			review.Response.Patch = []byte(`[{"op": "add", "path": `)
			writeJSON(w, review)
		},
	},
	{name: "wrong-ca", reason: "certificate signed by unknown authority"},
}

// testFailureHandling: every way of failing, under each failurePolicy, for mutating and
// validating webhooks. Fail refuses the request and stores nothing; Ignore admits it,
// unmutated.
func testFailureHandling(t *testing.T, e *env) {
	k := newCase(e.main, "failure")
	ns := k.namespace(t, nil)
	policies := []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore}
	selector := func(kind, mode string, policy admissionregistrationv1.FailurePolicyType) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"kind": kind, "mode": mode, "policy": string(policy)}}
	}
	clientConfig := func(kind string, mode failureMode) admissionregistrationv1.WebhookClientConfig {
		path := k.path(kind + "-" + mode.name)
		switch mode.name {
		case "connection-refused":
			url := fmt.Sprintf("https://127.0.0.1:%d%s", closedPort(t), path)
			return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: e.hooks.CABundle}
		case "wrong-ca":
			// Served, with a good answer, under a certificate of another CA; the bundle is
			// the usual one, so the server must not get as far as the answer.
			mutating := kind == "mutating"
			e.wrongCA.handleRaw(path, func(w http.ResponseWriter, _ *http.Request, c *call) { writeJSON(w, answer(c, mutating)) })
			cc := e.wrongCA.clientConfig(path)
			cc.CABundle = e.hooks.CABundle
			return cc
		}
		mutating := kind == "mutating"
		e.hooks.handleRaw(path, func(w http.ResponseWriter, r *http.Request, c *call) { mode.respond(w, r, c, mutating) })
		return e.hooks.clientConfig(path)
	}
	hookName := func(kind, mode string, policy admissionregistrationv1.FailurePolicyType) string {
		return k.hookName(fmt.Sprintf("%s-%s-%s", kind, mode, strings.ToLower(string(policy))))
	}

	var mutating []admissionregistrationv1.MutatingWebhook
	var validating []admissionregistrationv1.ValidatingWebhook
	for _, mode := range failureModes {
		for _, policy := range policies {
			m := mutatingHook(hookName("mutating", mode.name, policy), clientConfig("mutating", mode), k.selector(nil), configMapRule(opCreate))
			m.FailurePolicy, m.TimeoutSeconds, m.ObjectSelector = ptr(policy), ptr(int32(1)), selector("mutating", mode.name, policy)
			mutating = append(mutating, m)
			if mode.mutatingOnly {
				continue
			}
			v := validatingHook(hookName("validating", mode.name, policy), clientConfig("validating", mode), k.selector(nil), configMapRule(opCreate))
			v.FailurePolicy, v.TimeoutSeconds, v.ObjectSelector = ptr(policy), ptr(int32(1)), selector("validating", mode.name, policy)
			validating = append(validating, v)
		}
	}
	k.c.createMutating(t, mutatingConfig(k.configName("m"), mutating...))
	k.c.createValidating(t, validatingConfig(k.configName("v"), validating...))

	for _, kind := range []string{"mutating", "validating"} {
		t.Run(kind, func(t *testing.T) {
			for _, mode := range failureModes {
				if mode.mutatingOnly && kind != "mutating" {
					continue
				}
				for _, policy := range policies {
					t.Run(mode.name+"/"+string(policy), func(t *testing.T) {
						name := fmt.Sprintf("%s-%s-%s", kind, mode.name, strings.ToLower(string(policy)))
						labels := map[string]string{"kind": kind, "mode": mode.name, "policy": string(policy)}
						created, err := k.createConfigMap(t, k.configMap(ns, name, labels))
						if policy == admissionregistrationv1.Fail {
							wantRefused(t, err, "failed calling webhook", hookName(kind, mode.name, policy), mode.reason)
							if !apierrors.IsInternalError(err) {
								t.Errorf("failurePolicy Fail: want a 500 InternalError, as stock answers, got %v", err)
							}
							k.wantNotStored(t, ns, name)
						} else {
							if err != nil {
								t.Fatalf("failurePolicy Ignore: want admitted, got %v", err)
							}
							if got := k.storedConfigMap(t, ns, name).Labels[mutatedLabel]; got != "" || created.Labels[mutatedLabel] != "" {
								t.Errorf("failurePolicy Ignore: the failed webhook's patch was applied (label %s=%q)", mutatedLabel, got)
							}
						}
						calls := callsFor(e.hooks, k.path(kind+"-"+mode.name), name)
						if mode.reachesHandler && len(calls) != 1 {
							t.Errorf("the webhook's handler saw %d calls, want 1: the failure must come from its answer", len(calls))
						}
					})
				}
			}
		})
	}

	t.Run("the server still serves and has not panicked", func(t *testing.T) {
		body, err := k.c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(requestContext(t))
		if err != nil {
			t.Fatalf("/readyz after the failure cases: %v: %s", err, body)
		}
		log, err := os.ReadFile(k.c.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		// What utilruntime.HandleCrash logs when it recovers a panic (upstream's dispatch and
		// ours recover a validating call's panic with it), and the refusal of a panicked call.
		for _, panicked := range []string{"Observed a panic", "has panicked"} {
			if strings.Contains(string(log), panicked) {
				t.Errorf("%s records a panic (%q)", k.c.LogFile, panicked)
			}
		}
		if got := len(e.wrongCA.callsTo(k.path("mutating-wrong-ca"))) + len(e.wrongCA.callsTo(k.path("validating-wrong-ca"))); got != 0 {
			t.Errorf("the server completed %d calls to a webhook whose certificate it must not trust", got)
		}
	})
}
