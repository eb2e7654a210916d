package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PortcullisConfiguration holds every setting of this distribution that is not one plugin's
// own: the webhook dispatch, enforcement modes, and which of its APIs are served. It is the
// configuration of the admission config file's entry named Portcullis, which is no plugin: a
// stock kube-apiserver reads entries only for the plugins it enables, so it ignores this one,
// and the same file still starts it.
type PortcullisConfiguration struct {
	metav1.TypeMeta

	// WebhookDispatch turns on Portcullis's dispatch for upstream's webhook plugins. Without
	// it, MutatingAdmissionWebhook and ValidatingAdmissionWebhook are upstream's own, exactly
	// as in stock; their entries (upstream's WebhookAdmissionConfiguration) are read by
	// upstream's code either way.
	WebhookDispatch *WebhookDispatch

	// EnforcementModes sets the enforcement mode of validating admission plugins; a plugin
	// left out denies as it always has (docs/enforcement-modes.md).
	EnforcementModes []PluginEnforcement

	// ServedAPIs lists APIs of this distribution, as group/version, to serve even while the
	// plugin that enforces them is off: "policy/v1beta1" serves PodSecurityPolicy, so that
	// policies and their grants can be written before the PodSecurityPolicy plugin is enabled.
	// An API is served anyway while its plugin is enabled.
	ServedAPIs []string

	// AdmissionTrace records what each admission step did to a request (docs/troubleshooting.md).
	// A webhook plugin on Portcullis's dispatch records each webhook as a step of its own;
	// upstream's plugin is one step. The trace alone puts no plugin on Portcullis's dispatch.
	AdmissionTrace *AdmissionTrace
}

// AdmissionTrace says when the admission chain is traced: every plugin, built-in or ours, and
// every webhook, with what it changed (JSON patch paths of the object), its verdict and its
// duration.
type AdmissionTrace struct {
	// OnRequest traces a dry-run request whose object carries the annotation
	// admission.portcullis.io/trace: "true", when its user may "trace" the request's resource
	// (verb trace, the request's group, resource, subresource, namespace and name, asked of
	// the server's authorizer as a SubjectAccessReview is). The steps are returned as
	// warnings. Other requests cost one check of the request's dry-run flag per plugin.
	OnRequest bool

	// Audit traces every request and records each step in its audit event, under the
	// annotations trace.admission.portcullis.io/<phase>-<step>. Every mutating step then
	// serializes the object after it: measure the cost (make bench) before turning
	// it on for a busy server.
	Audit bool
}

// WebhookDispatch configures Portcullis's dispatch, per webhook plugin. A plugin left out is
// upstream's own.
type WebhookDispatch struct {
	// Mutating configures MutatingAdmissionWebhook's dispatch.
	Mutating *WebhookDispatchSettings

	// Validating configures ValidatingAdmissionWebhook's dispatch.
	Validating *WebhookDispatchSettings
}

// WebhookDispatchSettings are one webhook plugin's dispatch settings. With none of
// circuitBreaker, timeBudget, earlyExit, enforcementModes other than Deny and
// idempotencyProbe set, the plugin is upstream's own, whatever admissionTrace says.
type WebhookDispatchSettings struct {
	// CircuitBreaker, when set, keeps a breaker per webhook (see WebhookCircuitBreaker).
	CircuitBreaker *WebhookCircuitBreaker

	// TimeBudget, when set, bounds the time one request spends in this plugin's webhooks
	// (see WebhookTimeBudget).
	TimeBudget *WebhookTimeBudget

	// EarlyExit, validating only: the first denial (or failure under failurePolicy Fail)
	// answers the request and cancels the calls still out, instead of waiting for every call
	// as stock does.
	EarlyExit bool

	// EnforcementModes soften individual webhooks of this plugin, to roll one out: Audit
	// and/or Warn admit what a validating webhook denies (recording it); a mutating webhook in
	// Audit and/or Warn is a shadow, called but its patch never applied. A webhook left out
	// (or Deny) is enforced as in stock.
	EnforcementModes []WebhookEnforcement

	// IdempotencyProbe, mutating only, re-sends sampled calls' output to the webhook that
	// produced it, off the request path, and reports a webhook whose answer changes its own
	// output again: one that breaks on reinvocation.
	IdempotencyProbe *WebhookIdempotencyProbe
}

// WebhookEnforcement is the enforcement mode of one webhook.
type WebhookEnforcement struct {
	// Configuration is the name of the webhook's MutatingWebhookConfiguration or
	// ValidatingWebhookConfiguration (of this plugin's kind).
	Configuration string

	// Webhook is the webhook's name within the configuration.
	Webhook string

	// Modes is Deny alone (as stock), or Warn, Audit or both. A validating webhook's denial
	// (an answer with allowed: false and a 4xx code, 403 when none) is admitted: Warn returns
	// "<webhook> would deny this request ..." as a warning, Audit records it in the audit
	// event; both count it in portcullis_admission_webhook_would_deny_total. A call that
	// fails (timeout, refused connection, an invalid answer) still follows the webhook's
	// failurePolicy. A mutating webhook in Warn or Audit is called and its patch is not
	// applied: Warn lists the patch's paths in a warning, Audit records the patch in the
	// audit event, and nothing it answers or fails with fails the request.
	Modes []EnforcementMode

	// MaxWait bounds how long a request waits for this webhook's verdict (Warn or Audit
	// only). Unset, the request waits as long as the webhook would hold it enforced: its
	// timeoutSeconds, within the request's deadline, so that the verdict reaches the client
	// (Warn) and the request's audit event (Audit). 0s: the request never waits, and the
	// verdict is in the metrics and the server's log only. A verdict that comes after the
	// bound is counted as late (portcullis_admission_webhook_shadow_calls_total) and logged.
	// 0s to 30s.
	MaxWait *metav1.Duration
}

// WebhookIdempotencyProbe configures the idempotency probe of mutating webhooks.
type WebhookIdempotencyProbe struct {
	// OneIn probes one sampled call in this many of those that changed the object (1: every
	// one), of webhooks whose sideEffects are None or NoneOnDryRun; the probe is a dry-run
	// request. 1 to 1000000.
	OneIn int32

	// MaxInFlight bounds the probes under way; a sampled call finding them all busy is not
	// probed (counted as skipped). Default 2; 1 to 64.
	MaxInFlight *int32
}
