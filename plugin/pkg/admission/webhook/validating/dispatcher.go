package validating

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
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
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// dispatcher calls the matching validating webhooks in parallel, as stock does, and returns
// at the first denial (or failure under Fail), cancelling the calls still out: stock waits
// for every call and returns the first error to arrive, which is the same error, later.
type dispatcher struct {
	cm       *webhookutil.ClientManager
	plugin   *Plugin
	settings webhook.Settings
}

var _ generic.Dispatcher = &dispatcher{}

// versionedAttributes converts the request's attributes once per version webhooks ask for.
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

func (d *dispatcher) Dispatch(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces, hooks []upstreamwebhook.WebhookAccessor) error {
	v := &versionedAttributes{attr: attr, o: o, byVersion: map[schema.GroupVersionKind]*admission.VersionedAttributes{}}
	var invocations []*generic.WebhookInvocation
	for _, hook := range hooks {
		invocation, statusErr := d.plugin.ShouldCallHook(ctx, hook, attr, o, v)
		if statusErr != nil {
			return statusErr
		}
		if invocation == nil {
			continue
		}
		if _, err := v.VersionedAttribute(invocation.Kind); err != nil {
			return apierrors.NewInternalError(err)
		}
		invocations = append(invocations, invocation)
	}
	if len(invocations) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	default:
	}

	// Every call shares its version's serialization, done once, here, before the calls start.
	encoded := &webhook.EncodedObjects{}
	for _, va := range v.byVersion {
		for _, obj := range []interface{ Object() runtime.Object }{&va.VersionedObject, &va.VersionedOldObject} {
			if o := obj.Object(); o != nil {
				if _, err := encoded.JSON(o); err != nil {
					return apierrors.NewInternalError(err)
				}
			}
		}
	}

	budget := d.settings.Budget.For(ctx)
	start := time.Now()
	defer func() {
		d.settings.Metrics.ObserveRequest(stepType, attr.GetResource().GroupResource(), time.Since(start))
	}()
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Buffered for every call: calls still out when Dispatch returns finish without blocking.
	results := make(chan error, len(invocations))
	for i, invocation := range invocations {
		go func() {
			results <- d.callOne(callCtx, ctx, invocation, i, v.byVersion[invocation.Kind], encoded, budget)
		}()
	}
	for range invocations {
		if err := <-results; err != nil {
			// The first denial decides; the calls still out are cancelled.
			return err
		}
	}
	return nil
}

// callOne calls one webhook and returns the error the request must fail with, or nil. ctx is
// the calls' context, which Dispatch cancels once it has its answer; request is the
// request's own.
func (d *dispatcher) callOne(ctx, request context.Context, invocation *generic.WebhookInvocation, index int, attr *admission.VersionedAttributes,
	encoded *webhook.EncodedObjects, budget webhook.Budget) (result error) {
	hookName, ignore := "unknown", false
	defer func() {
		// A panic fails the call, under its failure policy, and never the server.
		if r := recover(); r != nil {
			utilruntime.HandleError(fmt.Errorf("ValidatingAdmissionWebhook/%v has panicked: %v", hookName, r))
			if ignore {
				d.failOpen(request, hookName, index, attr)
				result = nil
				return
			}
			result = apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionWebhook/%v has panicked: %v", hookName, r))
		}
	}()
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
	var callErr *webhookutil.ErrCallingWebhook
	if errors.As(err, &callErr) && errors.Is(callErr.Reason, context.Canceled) && request.Err() == nil {
		// Cancelled because another webhook already decided: no outcome to record.
		return nil
	}
	webhook.ObserveCall(request, hook.Name, stepType, attr, t, err, ignore, skipped)
	if err == nil {
		return nil
	}
	if callErr != nil {
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
	var result *webhookrequest.AdmissionResponse
	result, outcome, err = c.Do(ctx)
	if err != nil {
		return err
	}
	if result.Allowed {
		return nil
	}
	return &webhookutil.ErrWebhookRejection{Status: webhookerrors.ToStatusErr(h.Name, result.Result)}
}
