package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/tracing"
	"k8s.io/klog/v2"
)

// EncodedObjects holds the JSON of the objects sent to webhooks during one dispatch, by
// object identity: an object is serialized once per change, not once per webhook. The bytes
// are what stock sends (encoding/json's, which a RawExtension holding the object marshals
// to), so every webhook receives the same request body as from stock. An object must not be
// changed in place while cached: the dispatchers replace the object on every patch, and
// Reset the cache whenever upstream's conversion may have rewritten one in place
// (admission.ConvertVersionedAttributes writes the request's object, and ConvertToGVK
// hands that same object back when its version already matches).
type EncodedObjects struct {
	mu    sync.Mutex
	bytes map[runtime.Object][]byte
}

// JSON returns obj's JSON, serializing it on first use.
func (e *EncodedObjects) JSON(obj runtime.Object) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if raw, ok := e.bytes[obj]; ok {
		return raw, nil
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if e.bytes == nil {
		e.bytes = map[runtime.Object][]byte{}
	}
	e.bytes[obj] = raw
	return raw, nil
}

// seed gives obj's JSON, known already (obj is a copy of an object serialized before).
func (e *EncodedObjects) seed(obj runtime.Object, raw []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bytes == nil {
		e.bytes = map[runtime.Object][]byte{}
	}
	e.bytes[obj] = raw
}

// Reset forgets every object's JSON.
func (e *EncodedObjects) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.bytes)
}

// Call is one call to one webhook.
type Call struct {
	ClientManager *webhookutil.ClientManager
	Invocation    *generic.WebhookInvocation
	Attr          *admission.VersionedAttributes
	Encoded       *EncodedObjects
	// Name and SideEffects are the webhook's.
	Name        string
	SideEffects *admissionregistrationv1.SideEffectClass
	// Timeout bounds the call (0: none); Budget, when not nil, is why it is shorter than the
	// webhook's own.
	Timeout time.Duration
	Budget  *BudgetError
	// Mutating selects the mutating checks of the response, the span's and tracker's names.
	Mutating bool
}

// Respond handles a webhook's verified response within the call's trace span (the mutating
// plugin applies the patch there, as stock does), and says what the response tells of the
// webhook's health.
type Respond func(result *webhookrequest.AdmissionResponse, span *tracing.Span) (Outcome, error)

// Do makes the call, records the response's audit annotations and warnings, and hands the
// response to respond. Errors are upstream's: *webhookutil.ErrCallingWebhook when the call
// failed, a *apierrors.StatusError or *webhookutil.ErrWebhookRejection from respond. The
// Outcome is for the breaker.
func (c *Call) Do(ctx context.Context, respond Respond) (Outcome, error) {
	attr := c.Attr
	if attr.Attributes.IsDryRun() {
		if c.SideEffects == nil {
			return Abandoned, &webhookutil.ErrCallingWebhook{WebhookName: c.Name, Reason: fmt.Errorf("Webhook SideEffects is nil"), Status: apierrors.NewBadRequest("Webhook SideEffects is nil")}
		}
		if s := *c.SideEffects; s != admissionregistrationv1.SideEffectClassNone && s != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return Abandoned, webhookerrors.NewDryRunUnsupportedErr(c.Name)
		}
	}
	uid, request, response, err := webhookrequest.CreateAdmissionObjects(attr, c.Invocation)
	if err != nil {
		return Abandoned, &webhookutil.ErrCallingWebhook{WebhookName: c.Name, Reason: fmt.Errorf("could not create admission objects: %w", err), Status: apierrors.NewBadRequest("error creating admission objects")}
	}
	client, err := c.Invocation.Webhook.GetRESTClient(c.ClientManager)
	if err != nil {
		return Failed, &webhookutil.ErrCallingWebhook{WebhookName: c.Name, Reason: fmt.Errorf("could not get REST client: %w", err), Status: apierrors.NewInternalError(err)}
	}
	body, err := encodeReview(request, c.Encoded)
	if err != nil {
		// Where stock's client fails to encode the request body: a failed call, under the
		// webhook's failure policy, that says nothing of the webhook.
		return Abandoned, &webhookutil.ErrCallingWebhook{WebhookName: c.Name, Reason: fmt.Errorf("failed to call webhook: %w", err), Status: apierrors.NewServiceUnavailable("error calling webhook")}
	}
	spanName := "Call validating webhook"
	if c.Mutating {
		spanName = "Call mutating webhook"
	}
	parent := ctx
	ctx, span := tracing.Start(ctx, spanName,
		attribute.String("configuration", c.Invocation.Webhook.GetConfigurationName()),
		attribute.String("webhook", c.Name),
		attribute.Stringer("resource", attr.GetResource()),
		attribute.String("subresource", attr.GetSubresource()),
		attribute.String("operation", string(attr.GetOperation())),
		attribute.String("UID", string(uid)))
	defer span.End(500 * time.Millisecond)

	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	r := client.Post().SetHeader("Content-Type", runtime.ContentTypeJSON).Body(body)
	// Tell the webhook how long it has, in whole seconds rounded up, as stock does.
	if deadline, ok := ctx.Deadline(); ok {
		if timeout := time.Until(deadline); timeout > 0 {
			if truncated := timeout.Truncate(time.Second); truncated != timeout {
				timeout = truncated + time.Second
			}
			r.Timeout(timeout)
		}
	}
	do := func() { err = r.Do(ctx).Into(response) }
	if trackers, ok := endpointsrequest.LatencyTrackersFrom(ctx); ok {
		untracked := do
		tracker := trackers.ValidatingWebhookTracker
		if c.Mutating {
			tracker = trackers.MutatingWebhookTracker
		}
		do = func() { tracker.Track(untracked) }
	}
	do()
	if err != nil {
		status, ok := err.(*apierrors.StatusError)
		if !ok {
			status = apierrors.NewServiceUnavailable("error calling webhook")
		}
		reason := fmt.Errorf("failed to call webhook: %w", err)
		outcome := Failed
		switch {
		case parent.Err() != nil:
			outcome = Abandoned
		case c.Budget != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			// Cut short by the budget: the webhook might have answered in its own time,
			// unless it had most of that time.
			reason = fmt.Errorf("%w: %w", c.Budget, err)
			if !c.Budget.CountsAgainstWebhook() {
				outcome = Abandoned
			}
		}
		return outcome, &webhookutil.ErrCallingWebhook{WebhookName: c.Name, Reason: reason, Status: status}
	}
	span.AddEvent("Request completed")

	result, err := webhookrequest.VerifyAdmissionResponse(uid, c.Mutating, response)
	if err != nil {
		return Failed, &webhookutil.ErrCallingWebhook{WebhookName: c.Name, Reason: fmt.Errorf("received invalid webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error validating webhook response")}
	}
	for k, v := range result.AuditAnnotations {
		key := c.Name + "/" + k
		if err := attr.Attributes.AddAnnotation(key, v); err != nil {
			klog.Warningf("Failed to set admission audit annotation %s to %s for webhook %s: %v", key, v, c.Name, err)
		}
	}
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	return respond(result, span)
}

// Skip is why a call was not made, or failed, for a reason of ours: an open breaker, or the
// budget. It is an upstream call error, so that failure policies apply to it as to any.
func Skip(name string, reason error) *webhookutil.ErrCallingWebhook {
	return &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: reason, Status: apierrors.NewServiceUnavailable(reason.Error())}
}

// Policy is the metric label of a webhook's failure policy; the API defaults it to Fail.
func Policy(p *admissionregistrationv1.FailurePolicyType) string {
	if p != nil && *p == admissionregistrationv1.Ignore {
		return string(admissionregistrationv1.Ignore)
	}
	return string(admissionregistrationv1.Fail)
}

// OwnTimeout is a webhook's timeoutSeconds as a duration (0: none).
func OwnTimeout(seconds *int32) time.Duration {
	if seconds == nil {
		return 0
	}
	return time.Duration(*seconds) * time.Second
}

// Guard holds the checks of ours around one call: the budget, then the breaker.
type Guard struct {
	Breakers *Breakers
	Metrics  *Metrics
	Step     string
}

// Admit says whether h may be called now and with what timeout. When it may not, the
// returned error is the call's (with skipped set), and the short-circuit or shed is counted.
func (g Guard) Admit(h webhook.WebhookAccessor, policy string, budget Budget, own time.Duration) (permit Permit, timeout time.Duration, cut *BudgetError, skipped error) {
	// A spent budget first: a call that cannot be made must not take a breaker's probe.
	timeout, cut = budget.Fit(time.Now(), own)
	if cut != nil && cut.Shed {
		g.Metrics.budgetShed(h.GetName(), g.Step, policy)
		return Permit{}, 0, nil, Skip(h.GetName(), cut)
	}
	permit, open := g.Breakers.Allow(h)
	if open != nil {
		g.Metrics.shortCircuit(h.GetName(), g.Step, policy)
		return Permit{}, 0, nil, Skip(h.GetName(), open)
	}
	return permit, timeout, cut, nil
}

// Fitted is what a request's time budget gives a call where the request reaches it.
type Fitted struct {
	Timeout time.Duration
	Cut     *BudgetError
}

// FitAt is Fit as a Fitted.
func (b Budget) FitAt(now time.Time, own time.Duration) Fitted {
	timeout, cut := b.Fit(now, own)
	return Fitted{Timeout: timeout, Cut: cut}
}

// AdmitSoftened is Admit for a softened call, judged by fit: what the request's budget would
// have given it enforced, where the request reached it. A call the budget would shed is not
// made (its verdict is the shed's), without counting a shed: the budget refused nothing.
func (g Guard) AdmitSoftened(h webhook.WebhookAccessor, policy string, fit Fitted) (permit Permit, timeout time.Duration, cut *BudgetError, skipped error) {
	if fit.Cut != nil && fit.Cut.Shed {
		return Permit{}, 0, nil, Skip(h.GetName(), fit.Cut)
	}
	permit, open := g.Breakers.Allow(h)
	if open != nil {
		g.Metrics.shortCircuit(h.GetName(), g.Step, policy)
		return Permit{}, 0, nil, Skip(h.GetName(), open)
	}
	return permit, fit.Timeout, fit.Cut, nil
}

// CountCut counts a call the budget cut short that then ran out of time.
func (g Guard) CountCut(name, policy string, err error) {
	var cut *BudgetError
	if errors.As(reasonOf(err), &cut) {
		g.Metrics.budgetShed(name, g.Step, policy)
	}
}

// WarnSkipped tells the client, in a warning, that an Ignore webhook was skipped or failed
// open for a reason of ours. The warning names the webhook and the verdict only: the
// failure that opened the breaker (which may name the webhook's URL) and the budget's
// figures are in the log, and in the breaker's own log lines.
func WarnSkipped(ctx context.Context, name string, err error) {
	var open *BreakerOpenError
	var cut *BudgetError
	err = reasonOf(err)
	switch {
	case errors.As(err, &open):
		warning.AddWarning(ctx, "", fmt.Sprintf("admission webhook %q (failurePolicy Ignore) skipped: circuit breaker open", name))
	case errors.As(err, &cut) && cut.Shed:
		warning.AddWarning(ctx, "", fmt.Sprintf("admission webhook %q (failurePolicy Ignore) skipped: the request's webhook time budget is spent", name))
	case errors.As(err, &cut):
		warning.AddWarning(ctx, "", fmt.Sprintf("admission webhook %q (failurePolicy Ignore) failed open: no answer within the request's webhook time budget", name))
	}
}

// reasonOf is the reason of an upstream call error (which does not unwrap), or err.
func reasonOf(err error) error {
	if callErr, ok := err.(*webhookutil.ErrCallingWebhook); ok {
		return callErr.Reason
	}
	return err
}
