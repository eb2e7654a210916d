package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"
)

// Decorator wraps every plugin of the chain to trace it. Put it after the decorators that
// look for a plugin's optional interfaces and after the enforcement modes (so a step's
// verdict is what the chain sees), before upstream's metrics. A nil Decorator changes
// nothing.
type Decorator struct {
	onRequest, audit bool
	// authorizer decides who may trace; set once the server's authorizer exists (after the
	// chain is built, before the server serves). Until then no request is traced on request.
	authorizer atomic.Pointer[authorizer.Authorizer]

	// chain is each phase's plugins, in the chain's order (Decorate is called in it), so
	// that a step knows whether a later plugin will take the request.
	mu    sync.Mutex
	chain [2][]admission.Interface
}

var _ admission.Decorator = &Decorator{}

// New returns the decorator for the settings; nil when both are off.
func New(onRequest, audit bool) *Decorator {
	if !onRequest && !audit {
		return nil
	}
	return &Decorator{onRequest: onRequest, audit: audit}
}

// SetAuthorizer gives the decorator the server's authorizer.
func (d *Decorator) SetAuthorizer(a authorizer.Authorizer) {
	if d != nil {
		d.authorizer.Store(&a)
	}
}

// Decorate wraps handler so that its steps are traced, keeping exactly the phases it has.
func (d *Decorator) Decorate(handler admission.Interface, name string) admission.Interface {
	if d == nil {
		return handler
	}
	mutator, mutates := handler.(admission.MutationInterface)
	validator, validates := handler.(admission.ValidationInterface)
	s := step{Interface: handler, d: d, name: name}
	d.mu.Lock()
	if mutates {
		s.index[Mutating] = len(d.chain[Mutating])
		d.chain[Mutating] = append(d.chain[Mutating], handler)
	}
	if validates {
		s.index[Validating] = len(d.chain[Validating])
		d.chain[Validating] = append(d.chain[Validating], handler)
	}
	d.mu.Unlock()
	switch {
	case mutates && validates:
		return &mutatingAndValidating{mutating: mutating{step: s, mutator: mutator}, validator: validator}
	case mutates:
		return &mutating{step: s, mutator: mutator}
	case validates:
		return &validating{step: s, validator: validator}
	}
	return handler
}

// step is what every wrapper holds.
type step struct {
	// Interface supplies the plugin's own Handles.
	admission.Interface
	d    *Decorator
	name string
	// index is the plugin's place in each phase's chain.
	index [2]int
}

// last says whether no plugin after s in phase's chain takes op.
func (s step) last(phase Phase, op admission.Operation) bool {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	for _, later := range s.d.chain[phase][s.index[phase]+1:] {
		if later.Handles(op) {
			return false
		}
	}
	return true
}

// Unwrap returns the plugin.
func (s step) Unwrap() admission.Interface { return s.Interface }

type mutating struct {
	step
	mutator admission.MutationInterface
}

type validating struct {
	step
	validator admission.ValidationInterface
}

type mutatingAndValidating struct {
	mutating
	validator admission.ValidationInterface
}

var (
	_ admission.MutationInterface   = &mutating{}
	_ admission.ValidationInterface = &validating{}
	_ admission.MutationInterface   = &mutatingAndValidating{}
	_ admission.ValidationInterface = &mutatingAndValidating{}
)

func (w *mutating) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if w.d.audit || (w.d.onRequest && a.IsDryRun()) {
		if r := w.d.recorder(ctx, a); r != nil {
			return w.traceAdmit(ctx, r, a, o)
		}
	}
	return w.mutator.Admit(ctx, a, o)
}

func (w *validating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if w.d.audit || (w.d.onRequest && a.IsDryRun()) {
		if r := w.d.recorder(ctx, a); r != nil {
			return w.traceValidate(ctx, r, w.validator, a, o)
		}
	}
	return w.validator.Validate(ctx, a, o)
}

func (w *mutatingAndValidating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if w.d.audit || (w.d.onRequest && a.IsDryRun()) {
		if r := w.d.recorder(ctx, a); r != nil {
			return w.traceValidate(ctx, r, w.validator, a, o)
		}
	}
	return w.validator.Validate(ctx, a, o)
}

func (w *mutating) traceAdmit(ctx context.Context, r *Recorder, a admission.Attributes, o admission.ObjectInterfaces) error {
	ru, n := r.begin(ctx, a, Mutating)
	// Only the chain's plugins, each traced, run between two steps of a run: the object as
	// the run's last step left it is the object now. One serialization per step, not two.
	before := ru.object
	if before == nil {
		before = versionedJSON(a, o)
	}
	start := time.Now()
	err := w.mutator.Admit(ctx, a, o)
	s := Step{Name: w.name, Verdict: verdict(err), Duration: time.Since(start)}
	after := versionedJSON(a, o)
	if before != nil && after != nil {
		s.Paths = ChangedPaths(before, after)
	}
	ru.object = after
	s.Reinvoked = a.GetReinvocationContext().IsReinvoke()
	r.end(ctx, a, ru, Mutating, n, s, err != nil || w.last(Mutating, a.GetOperation()))
	return err
}

func (s step) traceValidate(ctx context.Context, r *Recorder, validator admission.ValidationInterface, a admission.Attributes, o admission.ObjectInterfaces) error {
	ru, n := r.begin(ctx, a, Validating)
	start := time.Now()
	err := validator.Validate(ctx, a, o)
	r.end(ctx, a, ru, Validating, n, Step{Name: s.name, Verdict: verdict(err), Duration: time.Since(start)}, err != nil || s.last(Validating, a.GetOperation()))
	return err
}

// recorder returns the request's trace, deciding at the first plugin that sees the request
// whether it is traced. A request without the state the server's handler chain gives it
// (WithRequestHandler) is not traced.
func (d *Decorator) recorder(ctx context.Context, a admission.Attributes) *Recorder {
	q := requestFrom(ctx)
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.decided {
		return q.recorder
	}
	q.decided = true
	wanted := d.onRequest && a.IsDryRun() && asked(a)
	if !wanted && !d.audit {
		// Not asked for: nothing is allocated.
		return nil
	}
	// Once per request: the decision is kept in its state.
	warn := wanted && d.allowed(ctx, a)
	if !warn && !d.audit {
		return nil
	}
	q.recorder = newRecorder(q, warn, d.audit)
	return q.recorder
}

// asked says whether the request's object carries the annotation asking for the trace.
func asked(a admission.Attributes) bool {
	obj := a.GetObject()
	if obj == nil {
		return false
	}
	accessor, err := meta.Accessor(obj)
	return err == nil && accessor.GetAnnotations()[Annotation] == "true"
}

// allowed asks the server's authorizer, as a SubjectAccessReview would, whether the
// request's user may trace its resource; a refusal is said in a warning.
func (d *Decorator) allowed(ctx context.Context, a admission.Attributes) bool {
	resource := a.GetResource()
	attrs := authorizer.AttributesRecord{
		User: a.GetUserInfo(), Verb: Verb, ResourceRequest: true,
		APIGroup: resource.Group, APIVersion: resource.Version, Resource: resource.Resource,
		Subresource: a.GetSubresource(), Namespace: a.GetNamespace(), Name: a.GetName(),
	}
	authz := d.authorizer.Load()
	if authz == nil || *authz == nil {
		warning.AddWarning(ctx, "", WarningPrefix+"not returned: the server's authorizer is not set up yet")
		return false
	}
	decision, reason, err := (*authz).Authorize(ctx, attrs)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Authorizing an admission trace failed", "user", attrs.User.GetName(), "err", err)
	}
	if decision == authorizer.DecisionAllow {
		return true
	}
	// The authorizer's reason is for the log: the client is told what it may not do.
	klog.FromContext(ctx).V(2).Info("Admission trace not returned", "user", attrs.User.GetName(), "decision", decision, "reason", reason)
	what := resource.Resource
	if resource.Group != "" {
		what += "." + resource.Group
	}
	msg := fmt.Sprintf("%snot returned: user %q may not %s %s", WarningPrefix, attrs.User.GetName(), Verb, what)
	if attrs.Namespace != "" {
		msg += " in namespace " + attrs.Namespace
	}
	warning.AddWarning(ctx, "", msg)
	return false
}

// versionedJSON is the request's object in the request's version, as JSON, so that paths
// are the API's (internal types have no JSON names); nil when there is none.
func versionedJSON(a admission.Attributes, o admission.ObjectInterfaces) []byte {
	obj := a.GetObject()
	if obj == nil {
		return nil
	}
	var versioned runtime.Object = obj
	if _, unstructured := obj.(runtime.Unstructured); !unstructured && o != nil {
		converted, err := o.GetObjectConvertor().ConvertToVersion(obj.DeepCopyObject(), a.GetKind().GroupVersion())
		if err == nil {
			versioned = converted
		}
	}
	raw, err := json.Marshal(versioned)
	if err != nil {
		return nil
	}
	return raw
}

// verdict says what an admission error means for the request.
func verdict(err error) string {
	if err == nil {
		return "admitted"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		msg := status.Status().Message
		if msg == "" {
			msg = err.Error()
		}
		if code := status.Status().Code; code < 500 {
			return fmt.Sprintf("denied (%d): %s", code, msg)
		}
		return fmt.Sprintf("error (%d): %s", status.Status().Code, msg)
	}
	return "error: " + err.Error()
}
