package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WebhookDispatchConfiguration configures Portcullis's dispatch of admission webhooks. It is
// the configuration of the admission config file's entry for MutatingAdmissionWebhook or
// ValidatingAdmissionWebhook, in place of upstream's WebhookAdmissionConfiguration, whose
// fields it carries. Upstream's kind keeps working there unchanged. With none of
// circuitBreaker, timeBudget and earlyExit set the plugin is upstream's own, exactly as in
// stock; with any of them, the dispatch is Portcullis's.
type WebhookDispatchConfiguration struct {
	metav1.TypeMeta

	// KubeConfigFile is the absolute path of a kubeconfig whose users authenticate the server
	// to webhooks, as in upstream's WebhookAdmissionConfiguration.
	KubeConfigFile string

	// StaticManifestsDir is the absolute path of a directory of webhook configuration
	// manifests (feature gate ManifestBasedAdmissionControlConfig), as in upstream's
	// WebhookAdmissionConfiguration.
	StaticManifestsDir string

	// CircuitBreaker, when set, keeps a breaker per webhook: after FailureThreshold
	// consecutive failed calls it opens, and calls short-circuit (an Ignore webhook is skipped
	// as failed open, a Fail webhook rejects at once) until a probe call succeeds.
	CircuitBreaker *WebhookCircuitBreaker

	// TimeBudget, when set, bounds the time one request spends in this plugin's webhooks, so
	// that webhook timeouts never make the request itself time out.
	TimeBudget *WebhookTimeBudget

	// EarlyExit, ValidatingAdmissionWebhook only: the first denial (or failure under
	// failurePolicy Fail) answers the request at once and cancels the calls still out,
	// instead of waiting for every call as stock does. The request's verdict is the same;
	// a cancelled call records only what stock records for a cancelled call.
	EarlyExit bool
}

// WebhookCircuitBreaker configures the per-webhook circuit breakers.
type WebhookCircuitBreaker struct {
	// FailureThreshold is how many consecutive failed calls (connection refused, timeout, TLS
	// error, an HTTP error status, an unparseable response) open a webhook's breaker.
	// Default 5; 1 to 1000.
	FailureThreshold *int32

	// InitialBackoff is how long a breaker stays open before its first probe. Each failed
	// probe doubles it, up to MaxBackoff; each wait is jittered by up to a fifth, so that the
	// servers of a control plane do not probe in step. Default 1s; 100ms to 10m.
	InitialBackoff *metav1.Duration

	// MaxBackoff caps the wait between probes. Default 30s; from InitialBackoff to 1h.
	MaxBackoff *metav1.Duration
}

// WebhookTimeBudget configures the time budget of a request's webhook calls.
type WebhookTimeBudget struct {
	// DeadlineMargin is kept back from the request's deadline (34 s for writes, less when the
	// client asks for less) for what follows the webhooks: the other admission plugins and
	// the write to etcd. The budget ends this long before the deadline. Default 2s; 100ms
	// to 30s.
	DeadlineMargin *metav1.Duration

	// MaxDuration, when set, also ends the budget this long after the server received the
	// request, whatever the deadline. From 1s to 10m.
	MaxDuration *metav1.Duration
}
