package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	localSchemeBuilder.Register(addPortcullisKnownTypes)
}

func addPortcullisKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PortcullisConfiguration{})
	return nil
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PortcullisConfiguration holds every setting of this distribution that is not one plugin's
// own: the webhook dispatch, enforcement modes, and which of its APIs are served. It is the
// configuration of the admission config file's entry named Portcullis, which is no plugin: a
// stock kube-apiserver reads entries only for the plugins it enables, so it ignores this one,
// and the same file still starts it.
type PortcullisConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// WebhookDispatch turns on Portcullis's dispatch for upstream's webhook plugins. Without
	// it, MutatingAdmissionWebhook and ValidatingAdmissionWebhook are upstream's own, exactly
	// as in stock; their entries (upstream's WebhookAdmissionConfiguration) are read by
	// upstream's code either way.
	// +optional
	WebhookDispatch *WebhookDispatch `json:"webhookDispatch,omitempty"`

	// EnforcementModes sets the enforcement mode of validating admission plugins; a plugin
	// left out denies as it always has (docs/enforcement-modes.md).
	// +optional
	// +listType=map
	// +listMapKey=name
	EnforcementModes []PluginEnforcement `json:"enforcementModes,omitempty"`

	// ServedAPIs lists APIs of this distribution, as group/version, to serve even while the
	// plugin that enforces them is off: "policy/v1beta1" serves PodSecurityPolicy, so that
	// policies and their grants can be written before the PodSecurityPolicy plugin is enabled.
	// An API is served anyway while its plugin is enabled.
	// +optional
	// +listType=set
	ServedAPIs []string `json:"servedAPIs,omitempty"`
}

// WebhookDispatch configures Portcullis's dispatch, per webhook plugin. A plugin left out is
// upstream's own.
type WebhookDispatch struct {
	// Mutating configures MutatingAdmissionWebhook's dispatch.
	// +optional
	Mutating *WebhookDispatchSettings `json:"mutating,omitempty"`

	// Validating configures ValidatingAdmissionWebhook's dispatch.
	// +optional
	Validating *WebhookDispatchSettings `json:"validating,omitempty"`
}

// WebhookDispatchSettings are one webhook plugin's dispatch settings. With none of
// circuitBreaker, timeBudget and earlyExit set, the plugin is upstream's own.
type WebhookDispatchSettings struct {
	// CircuitBreaker, when set, keeps a breaker per webhook (see WebhookCircuitBreaker).
	// +optional
	CircuitBreaker *WebhookCircuitBreaker `json:"circuitBreaker,omitempty"`

	// TimeBudget, when set, bounds the time one request spends in this plugin's webhooks
	// (see WebhookTimeBudget).
	// +optional
	TimeBudget *WebhookTimeBudget `json:"timeBudget,omitempty"`

	// EarlyExit, validating only: the first denial (or failure under failurePolicy Fail)
	// answers the request and cancels the calls still out, instead of waiting for every call
	// as stock does.
	// +optional
	EarlyExit bool `json:"earlyExit,omitempty"`
}
