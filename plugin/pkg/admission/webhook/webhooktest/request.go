package webhooktest

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	webhooktesting "k8s.io/apiserver/pkg/admission/plugin/webhook/testing"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
)

// Recorder records one request's warnings and audit annotations, and fails the test when
// either is recorded after the plugin returned: the handler may be writing the response by
// then, and a warning written then races it (concurrent map writes in the response's
// header) or is lost.
type Recorder struct {
	t        testing.TB
	returned atomic.Bool

	mu          sync.Mutex
	warnings    []string
	annotations map[string]string
}

// Request is one admission request: its context (a RequestContext recording warnings in
// the Recorder), its attributes (upstream's test Pod, recording annotations in the
// Recorder), and the Recorder. Call Returned once the plugin has returned.
func Request(t testing.TB) (context.Context, admission.Attributes, *Recorder) {
	return RequestOf(t, RequestSpec{})
}

// RequestSpec says how a request differs from Request's.
type RequestSpec struct {
	// Timeout is the request's (0: RequestContext's).
	Timeout time.Duration
	// ReceivedAgo is how long before now the server received it.
	ReceivedAgo time.Duration
	DryRun      bool
	// Parent is the context the request's derives from (nil: the background).
	Parent context.Context
}

// RequestOf is Request, as spec says.
func RequestOf(t testing.TB, spec RequestSpec) (context.Context, admission.Attributes, *Recorder) {
	r := &Recorder{t: t, annotations: map[string]string{}}
	parent := spec.Parent
	if parent == nil {
		parent = context.Background()
	}
	received := time.Now().Add(-spec.ReceivedAgo)
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = requestTimeout
	}
	ctx, cancel := context.WithDeadline(endpointsrequest.WithReceivedTimestamp(parent, received), received.Add(timeout))
	t.Cleanup(cancel)
	ctx = warning.WithWarningRecorder(ctx, r)
	return ctx, recordingAttributes{Attributes: webhooktesting.NewAttribute(Namespace, nil, spec.DryRun), r: r}, r
}

// Returned marks the plugin as returned.
func (r *Recorder) Returned() { r.returned.Store(true) }

func (r *Recorder) late(what string) {
	if r.returned.Load() {
		r.t.Errorf("%s recorded after the plugin returned", what)
	}
}

// AddWarning implements warning.Recorder.
func (r *Recorder) AddWarning(_, text string) {
	r.late("warning " + text)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// Warnings are the warnings recorded, in order.
func (r *Recorder) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.warnings)
}

// Annotations are the audit annotations recorded.
func (r *Recorder) Annotations() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.annotations)
}

// recordingAttributes record audit annotations in a Recorder.
type recordingAttributes struct {
	admission.Attributes
	r *Recorder
}

func (a recordingAttributes) AddAnnotation(k, v string) error {
	return a.AddAnnotationWithLevel(k, v, auditinternal.LevelMetadata)
}

func (a recordingAttributes) AddAnnotationWithLevel(k, v string, _ auditinternal.Level) error {
	a.r.late("annotation " + k)
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	a.r.annotations[k] = v
	return nil
}

// MatchEverything are rules that match every request.
func MatchEverything() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
	}}
}

// ValidatingWebhook is a webhook of policy matching every request, with no side effects,
// speaking admission/v1.
func ValidatingWebhook(name string, cc admissionregistrationv1.WebhookClientConfig, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: cc, FailurePolicy: &policy, SideEffects: &none, Rules: MatchEverything(),
		NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
		AdmissionReviewVersions: []string{"v1"},
	}
}
