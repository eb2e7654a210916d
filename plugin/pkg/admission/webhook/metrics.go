package webhook

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Metrics are the dispatch's own; every upstream apiserver_admission_webhook_* metric is
// recorded as well, through upstream's admission metrics, with upstream's labels. Webhook
// names and step types ("admit", "validating") are labelled as upstream labels them.
type Metrics struct {
	breakerState       *metrics.GaugeVec
	breakerTransitions *metrics.CounterVec
	shortCircuits      *metrics.CounterVec
	budgetSheds        *metrics.CounterVec
	requestDuration    *metrics.HistogramVec
	wouldDeny          *metrics.CounterVec
	probes             *metrics.CounterVec
	shadowCalls        *metrics.CounterVec

	// resources are the resource labels given out, at most maxResourceLabels; mu guards
	// adding to them.
	mu            sync.Mutex
	resources     sync.Map
	resourceCount int
}

// maxResourceLabels bounds the resource label of the per-request duration: the first this
// many resources seen are named, the rest are "other".
const maxResourceLabels = 100

// otherResource is the resource label beyond maxResourceLabels.
const otherResource = "other"

const namespace, subsystem = "portcullis", "admission_webhook"

// ProbesMetric is the idempotency probe's metric, as exposed.
const ProbesMetric = namespace + "_" + subsystem + "_idempotency_probes_total"

// NewMetrics creates the dispatch's metrics, unregistered.
func NewMetrics() *Metrics {
	return &Metrics{
		breakerState: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "breaker_state",
			Help:           "State of each webhook's circuit breaker: 0 closed, 1 half-open (probing), 2 open.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "type"}),
		breakerTransitions: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "breaker_transitions_total",
			Help:           "Circuit breaker state changes, by webhook and the state entered.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "type", "state"}),
		shortCircuits: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "short_circuits_total",
			Help:           "Webhook calls not made because the webhook's circuit breaker was open, by failure policy (Ignore: skipped, failed open; Fail: rejected).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "type", "failure_policy"}),
		budgetSheds: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "budget_sheds_total",
			Help:           "Webhook calls not made, or cut short, because the request's webhook time budget ran out, by failure policy (Ignore: failed open; Fail: rejected).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "type", "failure_policy"}),
		wouldDeny: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "would_deny_total",
			Help:           "Calls of webhooks in enforcement mode Warn, Audit or both (mode) whose outcome, enforced, would have refused or changed the request: a denial (outcome would_deny), a failure that refuses the request (would_fail: a failed call under failurePolicy Fail, a patch that does not apply, ...), a patch not applied (would_patch).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "type", "mode", "outcome"}),
		probes: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "idempotency_probes_total", // ProbesMetric
			Help:           "Idempotency probes of mutating webhooks, by result: idempotent (its own output came back unchanged), not_idempotent (it changed its own output again), failed (the probe call failed), skipped (every probe slot busy).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "result"}),
		shadowCalls: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "shadow_calls_total",
			Help:           "Calls of webhooks in enforcement mode Warn, Audit or both, made off the request path, by what became of the verdict: in_time (came within its bound while its request waited: recorded on the response and in the audit event), late (came after its bound, maxWait, timeoutSeconds or the request's time budget: in would_deny_total and the log only), async (not waited for: maxWait 0s, or a DeleteCollection that waited for an earlier object), refused (the request was refused or ended first), dropped (not made: the webhook's calls under way or their copies at their bound, or the server drained).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"name", "type", "result"}),
		requestDuration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "request_duration_seconds",
			Help:           "Time one request spent in one webhook plugin's calls, end to end, by step type and resource (the first 100 resources seen; then other). Requests that call no webhook are not observed.",
			Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30},
			StabilityLevel: metrics.ALPHA,
		}, []string{"type", "resource"}),
	}
}

var (
	registerOnce  sync.Once
	sharedMetrics = NewMetrics()
)

// LegacyMetrics returns the metrics registered in the process's legacy registry, where
// kube-apiserver's /metrics reads them. Both plugins, and every server the process runs,
// share them, as upstream's admission metrics are shared.
func LegacyMetrics() *Metrics {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(sharedMetrics.breakerState, sharedMetrics.breakerTransitions,
			sharedMetrics.shortCircuits, sharedMetrics.budgetSheds, sharedMetrics.requestDuration,
			sharedMetrics.wouldDeny, sharedMetrics.probes, sharedMetrics.shadowCalls)
	})
	return sharedMetrics
}

func (m *Metrics) setBreakerState(name, step string, s breakerState) {
	if m != nil {
		m.breakerState.WithLabelValues(name, step).Set(float64(s))
	}
}

func (m *Metrics) breakerTransition(name, step string, s breakerState) {
	if m != nil {
		m.breakerTransitions.WithLabelValues(name, step, s.String()).Inc()
	}
}

func (m *Metrics) forgetBreaker(name, step string) {
	if m != nil {
		m.breakerState.DeleteLabelValues(name, step)
	}
}

func (m *Metrics) shortCircuit(name, step, policy string) {
	if m != nil {
		m.shortCircuits.WithLabelValues(name, step, policy).Inc()
	}
}

func (m *Metrics) budgetShed(name, step, policy string) {
	if m != nil {
		m.budgetSheds.WithLabelValues(name, step, policy).Inc()
	}
}

// Outcomes of a softened webhook call, for WouldDeny.
const (
	OutcomeWouldDeny  = "would_deny"
	OutcomeWouldPatch = "would_patch"
)

func (m *Metrics) shadowCall(name, step, result string) {
	if m != nil {
		m.shadowCalls.WithLabelValues(name, step, result).Inc()
	}
}

// WouldDeny counts a softened webhook call whose denial (would_deny), refusing failure
// (would_fail) or patch (would_patch) a mode did not let through.
func (m *Metrics) WouldDeny(name, step, mode, outcome string) {
	if m != nil {
		m.wouldDeny.WithLabelValues(name, step, mode, outcome).Inc()
	}
}

// Results of an idempotency probe, for Probed.
const (
	ProbeIdempotent    = "idempotent"
	ProbeNotIdempotent = "not_idempotent"
	ProbeFailed        = "failed"
	ProbeSkipped       = "skipped"
)

// Probed counts an idempotency probe of a webhook.
func (m *Metrics) Probed(name, result string) {
	if m != nil {
		m.probes.WithLabelValues(name, result).Inc()
	}
}

// ObserveRequest records the time one request spent in one plugin's webhooks.
func (m *Metrics) ObserveRequest(step string, gr schema.GroupResource, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.requestDuration.WithLabelValues(step, m.resourceLabel(gr)).Observe(elapsed.Seconds())
}

func (m *Metrics) resourceLabel(gr schema.GroupResource) string {
	label := gr.String()
	// Every request with a webhook asks: a lock-free read once the resource is known.
	if _, known := m.resources.Load(label); known {
		return label
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, known := m.resources.Load(label); known {
		return label
	}
	if m.resourceCount >= maxResourceLabels {
		return otherResource
	}
	m.resources.Store(label, struct{}{})
	m.resourceCount++
	return label
}

// ObserveCall records upstream's webhook metrics for one webhook, as stock records them. A call
// not made (skipped) has no latency to record; its rejection, under Fail, is counted.
func ObserveCall(ctx context.Context, name, stepType string, attr *admission.VersionedAttributes, start time.Time, err error, ignore, skipped bool) {
	op := string(attr.Attributes.GetOperation())
	var callErr *webhookutil.ErrCallingWebhook
	var rejection *webhookutil.ErrWebhookRejection
	switch {
	case err == nil:
		admissionmetrics.Metrics.ObserveWebhook(ctx, name, time.Since(start), false, attr.Attributes, stepType, 200)
	case errors.As(err, &callErr):
		code := int(callErr.Status.ErrStatus.Code)
		if !ignore && !errors.Is(callErr.Reason, context.Canceled) {
			admissionmetrics.Metrics.ObserveWebhookRejection(ctx, name, stepType, op, admissionmetrics.WebhookRejectionCallingWebhookError, code)
		}
		if !skipped {
			admissionmetrics.Metrics.ObserveWebhook(ctx, name, time.Since(start), !ignore, attr.Attributes, stepType, code)
		}
	case errors.As(err, &rejection):
		code := int(rejection.Status.ErrStatus.Code)
		admissionmetrics.Metrics.ObserveWebhookRejection(ctx, name, stepType, op, admissionmetrics.WebhookRejectionNoError, code)
		admissionmetrics.Metrics.ObserveWebhook(ctx, name, time.Since(start), true, attr.Attributes, stepType, code)
	default:
		admissionmetrics.Metrics.ObserveWebhookRejection(ctx, name, stepType, op, admissionmetrics.WebhookRejectionAPIServerInternalError, 0)
		admissionmetrics.Metrics.ObserveWebhook(ctx, name, time.Since(start), true, attr.Attributes, stepType, 0)
	}
}

// ObserveSoftenedCall records upstream's webhook metrics for a softened call (enforcement mode
// Warn and/or Audit), which refuses nothing: its latency, as an admitted call's, whatever the
// webhook answered; never a rejection (apiserver_admission_webhook_rejection_count). A call
// not made (skipped) has no latency to record.
func ObserveSoftenedCall(ctx context.Context, name, stepType string, attr *admission.VersionedAttributes, start time.Time, skipped bool) {
	if !skipped {
		admissionmetrics.Metrics.ObserveWebhook(ctx, name, time.Since(start), false, attr.Attributes, stepType, 200)
	}
}
