package mutating

import (
	"context"
	"errors"
	"fmt"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	upstreamwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/component-base/tracing"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// dispatcher calls the matching mutating webhooks one after another, as stock does.
type dispatcher struct {
	cm       *webhookutil.ClientManager
	plugin   *Plugin
	settings webhook.Settings
}

var _ generic.Dispatcher = &dispatcher{}

// versionedAttributes converts the request's attributes to the version each webhook asks
// for, reusing one VersionedAttributes across webhooks so that a webhook's patch is what the
// next one sees. Upstream's conversion rewrites the request's object in place, so every
// conversion empties the serialization cache.
type versionedAttributes struct {
	attr    admission.Attributes
	o       admission.ObjectInterfaces
	current *admission.VersionedAttributes
	encoded *webhook.EncodedObjects
}

var _ generic.VersionedAttributeAccessor = &versionedAttributes{}

func (v *versionedAttributes) VersionedAttribute(gvk schema.GroupVersionKind) (*admission.VersionedAttributes, error) {
	if v.current == nil {
		va, err := admission.NewVersionedAttributes(v.attr, gvk, v.o)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		v.current = va
		return va, nil
	}
	if v.current.VersionedKind != gvk {
		v.encoded.Reset()
	}
	if err := admission.ConvertVersionedAttributes(v.current, gvk, v.o); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return v.current, nil
}

// softenedVersions converts, for a shadow asking another version than the request's
// current one, a copy of the object as the webhooks so far left it: upstream converts the
// old object first and the kind last, so a conversion failing half-way would leave the
// request's attributes half converted for the next enforced webhook. A failed conversion is
// the shadow's would_fail, never another webhook's input.
type softenedVersions struct {
	v         *versionedAttributes
	converted *admission.VersionedAttributes
}

var _ generic.VersionedAttributeAccessor = &softenedVersions{}

func (s *softenedVersions) VersionedAttribute(gvk schema.GroupVersionKind) (*admission.VersionedAttributes, error) {
	if s.converted != nil && s.converted.VersionedKind == gvk {
		return s.converted, nil
	}
	current := s.v.current
	if current != nil && current.VersionedKind == gvk {
		// No conversion: the shadow's call copies it.
		return current, nil
	}
	var source admission.Attributes = s.v.attr
	if current != nil && current.Dirty {
		// The webhooks' changes are in current's version only: into a copy of the
		// request's object, as the enforced conversion does into the request's own.
		obj := s.v.attr.GetObject().DeepCopyObject()
		if err := s.v.o.GetObjectConvertor().Convert(webhook.VersionedObject(current), obj, nil); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		source = withObject{Attributes: s.v.attr, object: obj}
	}
	converted, err := admission.NewVersionedAttributes(source, gvk, s.v.o)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	s.converted = converted
	return converted, nil
}

// withObject is attributes with another object.
type withObject struct {
	admission.Attributes
	object runtime.Object
}

func (w withObject) GetObject() runtime.Object { return w.object }

func (d *dispatcher) Dispatch(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces, hooks []upstreamwebhook.WebhookAccessor) (result error) {
	reinvocation := attr.GetReinvocationContext()
	state, _ := reinvocation.Value(PluginName).(*reinvocationState)
	if state == nil {
		state = &reinvocationState{}
		reinvocation.SetValue(PluginName, state)
	}
	if reinvocation.IsReinvoke() && state.outputChangedSinceLastCall(attr.GetObject()) {
		// Plugins after us changed the object: every reinvocable webhook runs again.
		state.requireReinvokingPreviouslyInvoked()
	}
	defer func() { state.setLastOutput(attr.GetObject()) }()

	round := 0
	if reinvocation.IsReinvoke() {
		round = 1
	} else {
		// A new admission run: shadows an earlier, discarded run left unharvested are
		// refused, not recorded beside this run's.
		webhook.RefuseUnharvested(ctx)
	}
	encoded := &webhook.EncodedObjects{}
	v := &versionedAttributes{attr: attr, o: o, encoded: encoded}
	budget := d.settings.Budget.For(ctx)
	start, called := time.Now(), false
	var shadows *webhook.ShadowBatch
	// Deferred first, so it runs last: the wait for the shadows is not the webhooks' time.
	defer func() {
		if r := recover(); r != nil {
			// A panic (upstream's dispatch does not recover one) refuses the request: its
			// shadows are not waited for; the panic goes on to the server's handler.
			if shadows != nil {
				shadows.Refuse()
			}
			panic(r)
		}
		switch {
		case shadows == nil:
		case result != nil:
			// A refused request does not wait.
			shadows.Refuse()
		default:
			record := func(ctx context.Context, attr admission.Attributes, results []webhook.ShadowResult) {
				d.recordShadows(ctx, attr, results, round)
			}
			// Harvested after the whole chain when it has a harvest point, so that the
			// wait overlaps the rest of the chain; here otherwise.
			if !webhook.Defer(ctx, shadows, record) {
				record(ctx, attr, shadows.Harvest(ctx))
			}
		}
	}()
	defer func() {
		if called {
			d.settings.Metrics.ObserveRequest(stepType, attr.GetResource().GroupResource(), time.Since(start))
		}
	}()

	for i, accessor := range hooks {
		attrForCheck := attr
		if v.current != nil {
			attrForCheck = v.current
		}
		// The mode is known before the matching's error is returned: a shadow's error refuses
		// nothing.
		configuration := accessor.GetConfigurationName()
		mode := d.settings.Modes.Of(configuration, accessor.GetName())
		if mode.Softens() && reinvocation.IsReinvoke() {
			// A shadow's patch is never applied, so it is never reinvoked: its verdict is
			// the first round's.
			continue
		}
		softened := webhook.Softened{Name: accessor.GetName(), Configuration: configuration, Mode: mode,
			AnnotationSuffix: fmt.Sprintf("round_%d_index_%d", round, i)}
		batch := func() *webhook.ShadowBatch {
			if shadows == nil {
				shadows = d.settings.Shadows.Batch()
			}
			return shadows
		}
		// A shadow's conversions are its own (softenedVersions).
		var versions generic.VersionedAttributeAccessor = v
		if mode.Softens() {
			versions = &softenedVersions{v: v}
		}
		invocation, statusErr := d.plugin.ShouldCallHook(ctx, accessor, attrForCheck, o, versions)
		if statusErr != nil {
			if mode.Softens() {
				batch().Settle(softened, i, d.settings.MaxWait(configuration, softened.Name), unmatched(statusErr))
				continue
			}
			return statusErr
		}
		if invocation == nil {
			continue
		}
		hook, ok := invocation.Webhook.GetMutatingWebhook()
		if !ok {
			return fmt.Errorf("mutating webhook dispatch requires v1.MutatingWebhook, but got %T", hook)
		}
		// A webhook skipped in the first round is not called for the first time on
		// reinvocation, as stock has it.
		if reinvocation.IsReinvoke() && !state.ShouldReinvokeWebhook(invocation.Webhook.GetUID()) {
			continue
		}
		versionedAttr, err := versions.VersionedAttribute(invocation.Kind)
		if err != nil {
			// Wrapped again, as stock's dispatcher wraps its accessor's error.
			err = apierrors.NewInternalError(err)
			if mode.Softens() {
				batch().Settle(softened, i, d.settings.MaxWait(configuration, softened.Name), unmatched(err))
				continue
			}
			return err
		}

		if mode.Softens() {
			// A shadow: called off the request path, on a copy of the object as it stands
			// here; the request goes on at once.
			shadowEncoded := encoded
			if versionedAttr != v.current {
				// Its own conversion: its own serialization.
				shadowEncoded = &webhook.EncodedObjects{}
			}
			d.submitShadow(ctx, batch(), hook, invocation, versionedAttr, shadowEncoded, o, softened, i, budget)
			continue
		}
		annotator := newAnnotator(versionedAttr, round, i, hook.Name, configuration)
		policy := webhook.Policy(hook.FailurePolicy)
		ignore := policy == string(admissionregistrationv1.Ignore)
		t := time.Now()
		changed := false
		permit, timeout, cut, skipped := d.settings.Guard.Admit(invocation.Webhook, policy, budget, webhook.OwnTimeout(hook.TimeoutSeconds))
		var patch []byte
		if skipped != nil {
			err = skipped
		} else {
			called = true
			changed, patch, err = d.call(ctx, hook, invocation, versionedAttr, annotator, o, encoded, timeout, cut, permit)
			d.settings.Guard.CountCut(hook.Name, policy, err)
		}
		webhook.ObserveCall(ctx, hook.Name, stepType, versionedAttr, t, err, ignore, skipped != nil)
		if r := trace.From(attr); r != nil {
			s := trace.Step{Name: webhook.HookStep(hook.Name, configuration), Verdict: webhook.Verdict(err, ignore, skipped != nil), Duration: time.Since(t), Reinvoked: round == 1}
			if changed {
				s.Paths = trace.PatchPaths(patch)
			}
			r.Sub(ctx, attr, trace.Mutating, s)
		}
		if changed && d.settings.Prober != nil {
			if output, err := encoded.JSON(webhook.VersionedObject(versionedAttr)); err == nil {
				d.settings.Prober.Offer(webhook.ProbeCall{ClientManager: d.cm, Invocation: invocation, Hook: hook, Attr: versionedAttr, Output: output})
			}
		}

		if changed {
			// The object changed: earlier reinvocable webhooks must see it.
			state.requireReinvokingPreviouslyInvoked()
			reinvocation.SetShouldReinvoke()
		}
		if hook.ReinvocationPolicy != nil && *hook.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			state.addPreviouslyInvoked(invocation.Webhook.GetUID())
		}
		if err == nil {
			continue
		}

		var callErr *webhookutil.ErrCallingWebhook
		if errors.As(err, &callErr) {
			if !ignore {
				klog.Warningf("Failed calling webhook, failing closed %v: %v", hook.Name, err)
				return apierrors.NewInternalError(err)
			}
			switch {
			case errors.Is(callErr.Reason, context.Canceled):
				klog.Warningf("Context canceled when calling webhook %v", hook.Name)
			case skipped != nil:
				klog.V(2).Infof("Webhook %v not called, failing open: %v", hook.Name, callErr)
				admissionmetrics.Metrics.ObserveWebhookFailOpen(ctx, hook.Name, stepType)
				annotator.addFailedOpenAnnotation()
				webhook.WarnSkipped(ctx, hook.Name, callErr)
			default:
				klog.Warningf("Failed calling webhook, failing open %v: %v", hook.Name, callErr)
				admissionmetrics.Metrics.ObserveWebhookFailOpen(ctx, hook.Name, stepType)
				annotator.addFailedOpenAnnotation()
				webhook.WarnSkipped(ctx, hook.Name, callErr)
				utilruntime.HandleError(callErr)
			}
			select {
			case <-ctx.Done():
				// The request itself is out of time: nothing more can be done for it.
				return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
			default:
				continue
			}
		}
		var rejection *webhookutil.ErrWebhookRejection
		if errors.As(err, &rejection) {
			return rejection.Status
		}
		return err
	}

	// Hand the webhooks' changes back to the request in its internal version.
	if v.current != nil && webhook.VersionedObject(v.current) != nil && v.current.Dirty {
		return o.GetObjectConvertor().Convert(webhook.VersionedObject(v.current), v.current.Attributes.GetObject(), nil)
	}
	return nil
}

// call calls one webhook and applies its patch to attr. It reports whether the object
// changed, and the call's outcome for the breaker.
func (d *dispatcher) call(ctx context.Context, h *admissionregistrationv1.MutatingWebhook, invocation *generic.WebhookInvocation, attr *admission.VersionedAttributes,
	annotator *annotator, o admission.ObjectInterfaces, encoded *webhook.EncodedObjects, timeout time.Duration, cut *webhook.BudgetError, permit webhook.Permit) (changed bool, patch []byte, err error) {
	defer func() { annotator.addMutationAnnotation(changed) }()
	// Deferred, so that even a panic leaves the breaker an outcome.
	outcome := webhook.Abandoned
	defer func() { permit.Done(outcome, err) }()
	c := d.newCall(h, invocation, attr, encoded, timeout, cut)
	outcome, err = c.Do(ctx, func(result *webhookrequest.AdmissionResponse, span *tracing.Span) (webhook.Outcome, error) {
		var applyErr error
		patch = result.Patch
		changed, applyErr = d.apply(h, result, attr, o, encoded, annotator, span)
		var callErr *webhookutil.ErrCallingWebhook
		if errors.As(applyErr, &callErr) {
			// An undecodable patch or a patch type nobody supports: the webhook's fault.
			return webhook.Failed, applyErr
		}
		return webhook.Succeeded, applyErr
	})
	return changed, patch, err
}

// newCall is one call to h, enforced or a shadow.
func (d *dispatcher) newCall(h *admissionregistrationv1.MutatingWebhook, invocation *generic.WebhookInvocation, attr *admission.VersionedAttributes,
	encoded *webhook.EncodedObjects, timeout time.Duration, cut *webhook.BudgetError) *webhook.Call {
	return &webhook.Call{
		ClientManager: d.cm, Invocation: invocation, Attr: attr, Encoded: encoded,
		Name: h.Name, SideEffects: h.SideEffects, Timeout: timeout, Budget: cut, Mutating: true,
	}
}

// submitShadow queues a call to a webhook in enforcement mode Warn and/or Audit (a shadow)
// on a copy of attr: its patch is computed against the copy and recorded, never applied,
// and its denial or failure is recorded, never returned.
func (d *dispatcher) submitShadow(ctx context.Context, batch *webhook.ShadowBatch, h *admissionregistrationv1.MutatingWebhook, invocation *generic.WebhookInvocation,
	attr *admission.VersionedAttributes, encoded *webhook.EncodedObjects, o admission.ObjectInterfaces, softened webhook.Softened, index int, budget webhook.Budget) {
	// A panic is a would_fail whatever the policy: upstream's mutating dispatcher does not
	// recover it.
	deadline, _ := ctx.Deadline()
	call := webhook.ShadowCall{Softened: softened, Index: index, Timeout: webhook.OwnTimeout(h.TimeoutSeconds), Deadline: deadline,
		WaitEnd: d.settings.Budget.WaitEnd(ctx), MaxWait: d.settings.MaxWait(softened.Configuration, softened.Name),
		Ignore: webhook.Policy(h.FailurePolicy) == string(admissionregistrationv1.Ignore)}
	// What the request's time budget would give the call here, enforced; the call is not
	// charged to it.
	fit := budget.FitAt(time.Now(), webhook.OwnTimeout(h.TimeoutSeconds))
	batch.SubmitCopy(call, attr, encoded, func(c *webhook.ShadowCall, shadowAttr *admission.VersionedAttributes, shadowEncoded *webhook.EncodedObjects) {
		c.Do = func(ctx context.Context) webhook.ShadowVerdict {
			return d.shadow(ctx, h, invocation, shadowAttr, shadowEncoded, o, fit)
		}
		c.Annotations = func() map[string]string {
			return webhook.OwnAnnotations(h.Name, webhook.RecordedAnnotations(shadowAttr))
		}
	})
}

// unmatched is the verdict of a shadow whose matching (match conditions, selectors, the
// object's conversion) failed on the request path with err: enforced, err refuses the
// request.
func unmatched(err error) webhook.ShadowVerdict {
	return webhook.ShadowVerdict{Outcome: webhook.OutcomeWouldFail, Reason: fmt.Errorf("matching the request: %w", err)}
}

// shadow calls a shadow webhook, off the request path, exactly as an enforced call is made
// (the breaker included, the request's time budget not), on attr, a copy of the request's
// attributes, and classifies its outcome as the enforced dispatch would act on it.
func (d *dispatcher) shadow(ctx context.Context, h *admissionregistrationv1.MutatingWebhook, invocation *generic.WebhookInvocation,
	attr *admission.VersionedAttributes, encoded *webhook.EncodedObjects, o admission.ObjectInterfaces, fit webhook.Fitted) webhook.ShadowVerdict {
	policy := webhook.Policy(h.FailurePolicy)
	ignore := policy == string(admissionregistrationv1.Ignore)
	t := time.Now()
	permit, timeout, cut, skipped := d.settings.Guard.AdmitSoftened(invocation.Webhook, policy, fit)
	var err error
	var changed bool
	var patch []byte
	if skipped != nil {
		err = skipped
	} else {
		// The annotator writes into the copy; the shadow's patch is recorded under keys of
		// its own.
		annotator := newAnnotator(attr, 0, 0, h.Name, invocation.Webhook.GetConfigurationName())
		changed, patch, err = d.call(ctx, h, invocation, attr, annotator, o, encoded, timeout, cut, permit)
	}
	// Upstream's metrics: its latency, as an admitted call's; it refuses nothing.
	webhook.ObserveSoftenedCall(ctx, h.Name, stepType, attr, t, skipped != nil)
	verdict := webhook.Classify(h.Name, err, ignore)
	if err == nil && changed {
		verdict = webhook.ShadowVerdict{Outcome: webhook.OutcomeWouldPatch, Patch: patch, Paths: trace.PatchPaths(patch)}
	}
	return verdict
}

// recordShadows records on the request the verdicts of the dispatch's shadows harvested.
func (d *dispatcher) recordShadows(ctx context.Context, attr admission.Attributes, results []webhook.ShadowResult, round int) {
	for _, r := range results {
		verdict := r.Record(ctx, attr, webhook.WouldDenyMutatingPrefix)
		if tr := trace.From(attr); tr != nil {
			tr.Sub(ctx, attr, trace.Mutating, trace.Step{Name: webhook.HookStep(r.Softened.Name, r.Softened.Configuration), Verdict: verdict,
				Paths: r.Verdict.Paths, Duration: r.Duration, Reinvoked: round == 1})
		}
	}
}

// apply applies an allowing webhook's patch to attr, within the call's span, and reports
// whether the object changed.
func (d *dispatcher) apply(h *admissionregistrationv1.MutatingWebhook, result *webhookrequest.AdmissionResponse, attr *admission.VersionedAttributes,
	o admission.ObjectInterfaces, encoded *webhook.EncodedObjects, annotator *annotator, span *tracing.Span) (bool, error) {
	if !result.Allowed {
		return false, &webhookutil.ErrWebhookRejection{Status: webhookerrors.ToStatusErr(h.Name, result.Result)}
	}
	if len(result.Patch) == 0 {
		return false, nil
	}
	patch, err := jsonpatch.DecodePatch(result.Patch)
	if err != nil {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.Name, Reason: fmt.Errorf("received undecodable patch in webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error decoding patch in webhook response")}
	}
	if len(patch) == 0 {
		return false, nil
	}
	current := webhook.VersionedObject(attr)
	if current == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.Name))
	}
	if result.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.Name, Reason: fmt.Errorf("unsupported patch type %q", result.PatchType), Status: webhookerrors.ToStatusErr(h.Name, result.Result)}
	}
	// The object's JSON is the one the request carried: no second serialization.
	currentJSON, err := encoded.JSON(current)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	patchedJSON, err := applyPatch(currentJSON, patch, current)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	var patched runtime.Object
	if _, ok := current.(*unstructured.Unstructured); ok {
		// Custom resources have no Go type.
		patched = &unstructured.Unstructured{}
	} else if patched, err = o.GetObjectCreater().New(attr.VersionedKind); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	serializer := json.NewSerializerWithOptions(json.DefaultMetaFactory, o.GetObjectCreater(), o.GetObjectTyper(), json.SerializerOptions{})
	if patched, _, err = serializer.Decode(patchedJSON, nil, patched); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	changed := !apiequality.Semantic.DeepEqual(current, patched)
	span.AddEvent("Patch applied")
	annotator.addPatchAnnotation(patch)
	// A new object, defaulted before anything serializes it: the cache keys on identity.
	webhook.UpdateVersionedObject(attr, patched)
	o.GetObjectDefaulter().Default(webhook.VersionedObject(attr))
	return changed, nil
}

// reinvocationState is what the plugin remembers across the two rounds of a request's
// mutating admission (reinvocationPolicy IfNeeded).
type reinvocationState struct {
	// lastOutput is the object as the plugin last left it.
	lastOutput runtime.Object
	// previouslyInvoked are the reinvocable webhooks called since the object last changed.
	previouslyInvoked sets.Set[string]
	// toReinvoke are the webhooks the second round calls again.
	toReinvoke sets.Set[string]
}

func (s *reinvocationState) outputChangedSinceLastCall(obj runtime.Object) bool {
	return !apiequality.Semantic.DeepEqual(s.lastOutput, obj)
}

func (s *reinvocationState) setLastOutput(obj runtime.Object) {
	if obj == nil {
		s.lastOutput = nil
		return
	}
	s.lastOutput = obj.DeepCopyObject()
}

func (s *reinvocationState) requireReinvokingPreviouslyInvoked() {
	if len(s.previouslyInvoked) == 0 {
		return
	}
	if s.toReinvoke == nil {
		s.toReinvoke = sets.New[string]()
	}
	s.toReinvoke = s.toReinvoke.Union(s.previouslyInvoked)
	s.previouslyInvoked = nil
}

func (s *reinvocationState) addPreviouslyInvoked(uid string) {
	if s.previouslyInvoked == nil {
		s.previouslyInvoked = sets.New[string]()
	}
	s.previouslyInvoked.Insert(uid)
}

func (s *reinvocationState) ShouldReinvokeWebhook(uid string) bool {
	return s.toReinvoke.Has(uid)
}
