package soak

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/internal/harness"
	"github.com/portcullis-k8s/portcullis/internal/pki"
)

// The four webhooks of every run, one HTTPS server on 127.0.0.1 serving them all.
const (
	mutateFailPath     = "/mutate/fail"
	mutateIgnorePath   = "/mutate/ignore"
	validateFailPath   = "/validate/fail"
	validateIgnorePath = "/validate/ignore"

	// mutatedByFail and mutatedByIgnore are the annotations the two mutating webhooks add;
	// the loss check requires them on every acknowledged pod.
	mutatedByFail   = "soak.portcullis.dev/mutated-by-fail"
	mutatedByIgnore = "soak.portcullis.dev/mutated-by-ignore"
	// refuseLabel marks the pods the failing validating webhook refuses.
	refuseLabel = "soak.portcullis.dev/refuse"
	// refusalMessage starts that webhook's refusals, so a refusal is told from a failure.
	refusalMessage = "soak: refused by design"

	webhookTimeoutSeconds = 5
	maxReviewSize         = 3 << 20
)

// webhookServer serves the four webhooks on a fixed port of 127.0.0.1, and can be killed
// (its listener and every connection closed) and restarted on the same port.
type webhookServer struct {
	addr     string
	caBundle []byte
	cert     tls.Certificate

	mu     sync.Mutex
	server *http.Server
}

// startWebhookServer writes its own CA and a serving certificate for 127.0.0.1 into dir,
// and serves on a fresh port.
func startWebhookServer(dir string) (*webhookServer, error) {
	cert, caPEM, err := pki.LoopbackServer(dir, "webhook")
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookServer{addr: listener.Addr().String(), caBundle: caPEM, cert: cert}
	w.serve(listener)
	return w, nil
}

func (w *webhookServer) serve(listener net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc(mutateFailPath, w.mutate(mutatedByFail))
	mux.HandleFunc(mutateIgnorePath, w.mutate(mutatedByIgnore))
	mux.HandleFunc(validateFailPath, w.refuseMarked)
	mux.HandleFunc(validateIgnorePath, w.allow)
	server := harness.HTTPSServer(mux, w.cert)
	w.mu.Lock()
	w.server = server
	w.mu.Unlock()
	go func() { _ = server.ServeTLS(listener, "", "") }()
}

// kill closes the listener and every connection at once, as a crashed server's would be.
func (w *webhookServer) kill() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.server == nil {
		return nil
	}
	err := w.server.Close()
	w.server = nil
	return err
}

// restart serves again on the same port, retrying the bind briefly in case the port is
// still held.
func (w *webhookServer) restart(ctx context.Context) error {
	var lastErr error
	for attempt := 0; attempt < 50; attempt++ {
		l, err := net.Listen("tcp", w.addr)
		if err == nil {
			w.serve(l)
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	return fmt.Errorf("restarting the webhook server on %s: %w", w.addr, lastErr)
}

func (w *webhookServer) close() error { return w.kill() }

// mutate adds annotation to the pod.
func (w *webhookServer) mutate(annotation string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		review, ok := decodeReview(rw, r)
		if !ok {
			return
		}
		var pod struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
			http.Error(rw, "decoding the pod: "+err.Error(), http.StatusBadRequest)
			return
		}
		key := strings.ReplaceAll(annotation, "/", "~1")
		patch := fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations/%s","value":"true"}]`, key)
		if pod.Metadata.Annotations == nil {
			patch = fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations","value":{%q:"true"}}]`, annotation)
		}
		patchType := admissionv1.PatchTypeJSONPatch
		answerReview(rw, &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: []byte(patch), PatchType: &patchType})
	}
}

// refuseMarked refuses the pods labelled refuseLabel, and allows the rest.
func (w *webhookServer) refuseMarked(rw http.ResponseWriter, r *http.Request) {
	review, ok := decodeReview(rw, r)
	if !ok {
		return
	}
	var pod struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(review.Request.Object.Raw, &pod); err != nil {
		http.Error(rw, "decoding the pod: "+err.Error(), http.StatusBadRequest)
		return
	}
	response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if _, marked := pod.Metadata.Labels[refuseLabel]; marked {
		response.Allowed = false
		response.Result = &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: refusalMessage + ": the pod " + pod.Metadata.Name + " carries " + refuseLabel}
	}
	answerReview(rw, response)
}

func (w *webhookServer) allow(rw http.ResponseWriter, r *http.Request) {
	review, ok := decodeReview(rw, r)
	if !ok {
		return
	}
	answerReview(rw, &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true})
}

func decodeReview(rw http.ResponseWriter, r *http.Request) (*admissionv1.AdmissionReview, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewSize))
	if err != nil {
		http.Error(rw, "reading the review: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview with a request", http.StatusBadRequest)
		return nil, false
	}
	return &review, true
}

func answerReview(rw http.ResponseWriter, response *admissionv1.AdmissionResponse) {
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: response,
	})
}

// registerWebhooks creates the configurations of the four webhooks, over pod creates in
// namespace only.
func (w *webhookServer) registerWebhooks(ctx context.Context, client kubernetes.Interface, namespace string) error {
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := "https://" + w.addr + path
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.caBundle}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"pods"}, Scope: ptr(admissionregistrationv1.NamespacedScope)},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace}}
	none := admissionregistrationv1.SideEffectClassNone
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	timeout := int32(webhookTimeoutSeconds)
	mutating := func(name, path string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: name, ClientConfig: clientConfig(path), Rules: rules, NamespaceSelector: selector,
			FailurePolicy: &policy, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	validating := func(name, path string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name, ClientConfig: clientConfig(path), Rules: rules, NamespaceSelector: selector,
			FailurePolicy: &policy, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-" + namespace},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			mutating("fail.mutate.soak.portcullis.dev", mutateFailPath, fail),
			mutating("ignore.mutate.soak.portcullis.dev", mutateIgnorePath, ignore),
		},
	}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the mutating webhooks: %w", err)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-" + namespace},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validating("fail.validate.soak.portcullis.dev", validateFailPath, fail),
			validating("ignore.validate.soak.portcullis.dev", validateIgnorePath, ignore),
		},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the validating webhooks: %w", err)
	}
	return nil
}

// errNotYet says a condition polled for does not hold yet.
var errNotYet = errors.New("not yet")

func ptr[T any](v T) *T { return &v }
