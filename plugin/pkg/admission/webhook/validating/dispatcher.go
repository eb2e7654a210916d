package validating

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	upstreamwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	upstreamvalidating "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/component-base/tracing"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// dispatcher calls the matching validating webhooks in parallel, as stock does, and returns
// the first denial (or failure under Fail) to arrive. Stock waits for every call; with
// EarlyExit, the first denial cancels the calls still out. Either way Dispatch returns only
// once every enforced call has returned, so nothing a call records (warnings, audit
// annotations, metrics) is written after the request has been answered.
//
// Webhooks in enforcement mode Warn and/or Audit (softened) never refuse or fail the request:
// they are called off the request path, by the plugin's shadow pool, on a copy of the
// request's attributes, starting when the enforced ones start. Once the enforced calls have
// returned, Dispatch waits for the softened ones, each at most as long as it would hold the
// request enforced or its maxWait, and records their verdicts; a verdict later than that is
// the metric's and the log's only (late).
type dispatcher struct {
	cm       *webhookutil.ClientManager
	plugin   *Plugin
	settings webhook.Settings
}

var _ generic.Dispatcher = &dispatcher{}

// versionedAttributes converts the request's attributes once per version webhooks ask for.
// Each conversion is a new object (upstream's NewVersionedAttributes never rewrites the
// request's), so the serialization cache stays valid.
type versionedAttributes struct {
	attr      admission.Attributes
	o         admission.ObjectInterfaces
	byVersion map[schema.GroupVersionKind]*admission.VersionedAttributes
}

var _ generic.VersionedAttributeAccessor = &versionedAttributes{}

func (v *versionedAttributes) VersionedAttribute(gvk schema.GroupVersionKind) (*admission.VersionedAttributes, error) {
	if va, ok := v.byVersion[gvk]; ok {
		return va, nil
	}
	va, err := admission.NewVersionedAttributes(v.attr, gvk, v.o)
	if err != nil {
		return nil, err
	}
	v.byVersion[gvk] = va
	return va, nil
}

func (d *dispatcher) Dispatch(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces, hooks []upstreamwebhook.WebhookAccessor) (result error) {
	v := &versionedAttributes{attr: attr, o: o, byVersion: map[schema.GroupVersionKind]*admission.VersionedAttributes{}}
	var invocations []*generic.WebhookInvocation
	// softened are the softened invocations, by their index among every matching webhook.
	softened := map[int]*generic.WebhookInvocation{}
	matched := 0
	// indexes are the enforced invocations' indexes among every matching webhook, as stock
	// numbers its audit annotations.
	var indexes []int
	// unmatched are the softened webhooks whose matching failed (their verdict: would_fail).
	var unmatched []unmatchedHook
	for _, hook := range hooks {
		// The mode is known before the matching's error is returned: a softened webhook's
		// error refuses nothing.
		mode := d.settings.Modes.Of(hook.GetConfigurationName(), hook.GetName())
		invocation, statusErr := d.plugin.ShouldCallHook(ctx, hook, attr, o, v)
		var err error
		if statusErr != nil {
			err = statusErr
		} else if invocation != nil {
			if _, convErr := v.VersionedAttribute(invocation.Kind); convErr != nil {
				err = apierrors.NewInternalError(convErr)
			}
		}
		if err != nil {
			if !mode.Softens() {
				return err
			}
			matched++
			unmatched = append(unmatched, unmatchedHook{hook: hook, index: matched - 1, err: err})
			continue
		}
		if invocation == nil {
			continue
		}
		matched++
		if mode.Softens() {
			softened[matched-1] = invocation
			continue
		}
		invocations = append(invocations, invocation)
		indexes = append(indexes, matched-1)
	}
	if len(invocations) == 0 && len(softened) == 0 && len(unmatched) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	default:
	}

	// The calls share each version's serialization: the first call to need it makes it.
	encoded := &webhook.EncodedObjects{}
	budget := d.settings.Budget.For(ctx)
	if len(softened) > 0 || len(unmatched) > 0 {
		batch := d.settings.Shadows.Batch()
		// Once the enforced calls have returned: the wait for the softened ones overlaps
		// theirs. A refused request does not wait, nor does a panicking dispatch (the
		// panic goes on to the server's handler).
		defer func() {
			if r := recover(); r != nil {
				batch.Refuse()
				panic(r)
			}
			d.recordSoftened(ctx, attr, batch, result != nil)
		}()
		waitEnd := d.settings.Budget.WaitEnd(ctx)
		for _, u := range unmatched {
			d.settleUnmatched(batch, u)
		}
		for index, invocation := range softened {
			d.submitSoftened(ctx, batch, invocation, index, v.byVersion[invocation.Kind], encoded, budget, waitEnd)
		}
	}
	if len(invocations) == 0 {
		return nil
	}
	start := time.Now()
	defer func() {
		d.settings.Metrics.ObserveRequest(stepType, attr.GetResource().GroupResource(), time.Since(start))
	}()
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan error, len(invocations))
	for i, invocation := range invocations {
		go func() {
			results <- d.callOne(callCtx, ctx, invocation, indexes[i], v.byVersion[invocation.Kind], encoded, budget)
		}()
	}
	// Every call's result is received, so every call has returned, before Dispatch does.
	var first error
	for range invocations {
		err := <-results
		switch {
		case err == nil:
		case first == nil:
			first = err
			if d.settings.EarlyExit {
				// The verdict is known: the calls still out are cancelled.
				cancel()
			}
		default:
			// As stock: the first error decides, the others are logged.
			utilruntime.HandleError(err)
		}
	}
	return first
}

// unmatchedHook is a softened webhook whose matching (match conditions, selectors, the
// object's conversion) failed on the request path: enforced, err would refuse the request.
type unmatchedHook struct {
	hook  upstreamwebhook.WebhookAccessor
	index int
	err   error
}

// settleUnmatched records a softened webhook's failed matching as the would_fail it would be
// enforced, as its call's verdict would be recorded.
func (d *dispatcher) settleUnmatched(batch *webhook.ShadowBatch, u unmatchedHook) {
	name, configuration := u.hook.GetName(), u.hook.GetConfigurationName()
	batch.Settle(webhook.Softened{Name: name, Configuration: configuration, Mode: d.settings.Modes.Of(configuration, name),
		AnnotationSuffix: fmt.Sprintf("round_0_index_%d", u.index)}, u.index, d.settings.MaxWait(configuration, name),
		webhook.ShadowVerdict{Outcome: webhook.OutcomeWouldFail, Reason: fmt.Errorf("matching the request: %w", u.err)})
}

// submitSoftened queues a call to a webhook in Warn and/or Audit on a copy of attr.
func (d *dispatcher) submitSoftened(ctx context.Context, batch *webhook.ShadowBatch, invocation *generic.WebhookInvocation, index int, attr *admission.VersionedAttributes,
	encoded *webhook.EncodedObjects, budget webhook.Budget, waitEnd time.Time) {
	hook, ok := invocation.Webhook.GetValidatingWebhook()
	if !ok {
		utilruntime.HandleError(fmt.Errorf("validating webhook dispatch requires v1.ValidatingWebhook, but got %T", hook))
		return
	}
	configuration := invocation.Webhook.GetConfigurationName()
	policy := webhook.Policy(hook.FailurePolicy)
	ignore := policy == string(admissionregistrationv1.Ignore)
	deadline, _ := ctx.Deadline()
	call := webhook.ShadowCall{
		Softened: webhook.Softened{Name: hook.Name, Configuration: configuration, Mode: d.settings.Modes.Of(configuration, hook.Name),
			AnnotationSuffix: fmt.Sprintf("round_0_index_%d", index)},
		Index: index, Timeout: webhook.OwnTimeout(hook.TimeoutSeconds), Deadline: deadline,
		WaitEnd: waitEnd, MaxWait: d.settings.MaxWait(configuration, hook.Name),
		// As upstream's validating dispatcher: a panic fails open under Ignore.
		FailOpenOnPanic: ignore, Ignore: ignore,
	}
	// What the request's time budget would give the call here, enforced; the call is not
	// charged to it.
	fit := budget.FitAt(time.Now(), webhook.OwnTimeout(hook.TimeoutSeconds))
	batch.SubmitCopy(call, attr, encoded, func(c *webhook.ShadowCall, shadowAttr *admission.VersionedAttributes, shadowEncoded *webhook.EncodedObjects) {
		c.Do = func(ctx context.Context) webhook.ShadowVerdict {
			t := time.Now()
			permit, timeout, cut, err := d.settings.Guard.AdmitSoftened(invocation.Webhook, policy, fit)
			skipped := err != nil
			if !skipped {
				err = d.call(ctx, hook, invocation, shadowAttr, shadowEncoded, timeout, cut, permit)
			}
			// Upstream's metrics: its latency, as an admitted call's; it refuses nothing.
			webhook.ObserveSoftenedCall(ctx, hook.Name, stepType, shadowAttr, t, skipped)
			return webhook.Classify(hook.Name, err, ignore)
		}
		c.Annotations = func() map[string]string {
			return webhook.OwnAnnotations(hook.Name, webhook.RecordedAnnotations(shadowAttr))
		}
	})
}

// recordSoftened waits for the softened calls, each within its bound, and records their
// verdicts on the request; for a refused request it only closes the batch.
func (d *dispatcher) recordSoftened(ctx context.Context, attr admission.Attributes, batch *webhook.ShadowBatch, refused bool) {
	if refused {
		batch.Refuse()
		return
	}
	for _, r := range batch.Harvest(ctx) {
		verdict := r.Record(ctx, attr, webhook.WouldDenyValidatingPrefix)
		if tr := trace.From(attr); tr != nil {
			tr.Sub(ctx, attr, trace.Validating, trace.Step{Name: webhook.HookStep(r.Softened.Name, r.Softened.Configuration), Verdict: verdict, Duration: r.Duration})
		}
	}
}

// callOne calls one webhook and returns the error the request must fail with, or nil. ctx is
// the calls' context, which Dispatch cancels at the first denial under EarlyExit; request is
// the request's own.
func (d *dispatcher) callOne(ctx, request context.Context, invocation *generic.WebhookInvocation, index int, attr *admission.VersionedAttributes,
	encoded *webhook.EncodedObjects, budget webhook.Budget) (result error) {
	hookName, ignore := "unknown", false
	// A panic fails the call, under its failure policy, and never the server. HandleCrash
	// logs it with its stack as stock's does; with ReallyCrash set it panics again, which
	// the first deferred function stops.
	defer func() { _ = recover() }()
	defer utilruntime.HandleCrash(func(r interface{}) {
		if ignore {
			klog.Warningf("Panic calling webhook, failing open %v: %v", hookName, r)
			d.failOpen(request, hookName, index, attr)
			result = nil
			return
		}
		result = apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionWebhook/%v has panicked: %v", hookName, r))
	})
	hook, ok := invocation.Webhook.GetValidatingWebhook()
	if !ok {
		utilruntime.HandleError(fmt.Errorf("validating webhook dispatch requires v1.ValidatingWebhook, but got %T", hook))
		return nil
	}
	hookName = hook.Name
	policy := webhook.Policy(hook.FailurePolicy)
	ignore = policy == string(admissionregistrationv1.Ignore)

	t := time.Now()
	permit, timeout, cut, err := d.settings.Guard.Admit(invocation.Webhook, policy, budget, webhook.OwnTimeout(hook.TimeoutSeconds))
	skipped := err != nil
	if !skipped {
		err = d.call(ctx, hook, invocation, attr, encoded, timeout, cut, permit)
		d.settings.Guard.CountCut(hook.Name, policy, err)
	}
	configuration := invocation.Webhook.GetConfigurationName()
	webhook.ObserveCall(request, hook.Name, stepType, attr, t, err, ignore, skipped)
	if r := trace.From(attr.Attributes); r != nil {
		r.Sub(request, attr.Attributes, trace.Validating, trace.Step{Name: webhook.HookStep(hook.Name, configuration), Verdict: webhook.Verdict(err, ignore, skipped), Duration: time.Since(t)})
	}
	if err == nil {
		return nil
	}
	var callErr *webhookutil.ErrCallingWebhook
	if errors.As(err, &callErr) {
		if errors.Is(callErr.Reason, context.Canceled) && request.Err() == nil {
			// Cancelled by the early exit: another webhook decided. Recorded above as stock
			// records a cancelled call; it has no verdict of its own.
			klog.V(2).Infof("Call to webhook %v cancelled: the request was already denied", hook.Name)
			return nil
		}
		if !ignore {
			klog.Warningf("Failed calling webhook, failing closed %v: %v", hook.Name, err)
			return apierrors.NewInternalError(err)
		}
		switch {
		case errors.Is(callErr.Reason, context.Canceled):
			klog.Warningf("Context canceled when calling webhook %v", hook.Name)
		case skipped:
			klog.V(2).Infof("Webhook %v not called, failing open: %v", hook.Name, callErr)
			d.failOpen(request, hook.Name, index, attr)
			webhook.WarnSkipped(request, hook.Name, callErr)
		default:
			klog.Warningf("Failed calling webhook, failing open %v: %v", hook.Name, callErr)
			d.failOpen(request, hook.Name, index, attr)
			webhook.WarnSkipped(request, hook.Name, callErr)
			utilruntime.HandleError(callErr)
		}
		return nil
	}
	var rejection *webhookutil.ErrWebhookRejection
	if errors.As(err, &rejection) {
		err = rejection.Status
	}
	klog.Warningf("rejected by webhook %q: %#v", hook.Name, err)
	return err
}

// failOpen records an Ignore webhook's failure as stock does: the metric and the audit
// annotation.
func (d *dispatcher) failOpen(ctx context.Context, name string, index int, attr *admission.VersionedAttributes) {
	admissionmetrics.Metrics.ObserveWebhookFailOpen(ctx, name, stepType)
	key := fmt.Sprintf("%sround_0_index_%d", upstreamvalidating.ValidatingAuditAnnotationFailedOpenKeyPrefix, index)
	if err := attr.Attributes.AddAnnotation(key, name); err != nil {
		klog.Warningf("Failed to set admission audit annotation %s to %s for validating webhook %s: %v", key, name, name, err)
	}
}

func (d *dispatcher) call(ctx context.Context, h *admissionregistrationv1.ValidatingWebhook, invocation *generic.WebhookInvocation, attr *admission.VersionedAttributes,
	encoded *webhook.EncodedObjects, timeout time.Duration, cut *webhook.BudgetError, permit webhook.Permit) (err error) {
	// Deferred, so that even a panic leaves the breaker an outcome.
	outcome := webhook.Abandoned
	defer func() { permit.Done(outcome, err) }()
	c := &webhook.Call{
		ClientManager: d.cm, Invocation: invocation, Attr: attr, Encoded: encoded,
		Name: h.Name, SideEffects: h.SideEffects, Timeout: timeout, Budget: cut,
	}
	outcome, err = c.Do(ctx, func(result *webhookrequest.AdmissionResponse, _ *tracing.Span) (webhook.Outcome, error) {
		if result.Allowed {
			return webhook.Succeeded, nil
		}
		return webhook.Succeeded, &webhookutil.ErrWebhookRejection{Status: webhookerrors.ToStatusErr(h.Name, result.Result)}
	})
	return err
}
