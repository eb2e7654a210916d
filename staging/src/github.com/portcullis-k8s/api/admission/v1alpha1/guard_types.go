package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	localSchemeBuilder.Register(addGuardKnownTypes)
}

func addGuardKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &WebhookConfigurationGuardConfiguration{})
	return nil
}

// GuardCheckMode says what the WebhookConfigurationGuard plugin does with a check's
// findings.
type GuardCheckMode string

const (
	// GuardCheckModeWarn admits the write and returns each finding as a warning (kubectl
	// prints them). The default: a guard turned on must not break existing tooling.
	GuardCheckModeWarn GuardCheckMode = "Warn"
	// GuardCheckModeDeny refuses the write (403), listing every finding of every Deny check.
	GuardCheckModeDeny GuardCheckMode = "Deny"
	// GuardCheckModeOff skips the check: it is not even computed.
	GuardCheckModeOff GuardCheckMode = "Off"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WebhookConfigurationGuardConfiguration configures the WebhookConfigurationGuard admission
// plugin, which checks Mutating- and ValidatingWebhookConfigurations against the
// Kubernetes "Admission Webhook Good Practices" when they are written.
type WebhookConfigurationGuardConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Checks sets the mode of each check; a check left out is Warn.
	// +optional
	Checks GuardChecks `json:"checks,omitempty"`

	// TimeoutThresholdSeconds is the largest timeoutSeconds the timeout check accepts.
	// Defaults to 5.
	// +optional
	TimeoutThresholdSeconds *int32 `json:"timeoutThresholdSeconds,omitempty"`

	// RequestBudgetSeconds is the time a request may spend in webhooks, which the chain
	// check compares each resource's worst case with. Defaults to 34 (the server's request
	// timeout, less what the rest of the request needs); set it to the webhook dispatch
	// budget when one is configured.
	// +optional
	RequestBudgetSeconds *int32 `json:"requestBudgetSeconds,omitempty"`
}

// GuardChecks holds the mode of each check of the WebhookConfigurationGuard plugin. Each
// is Warn, Deny or Off; empty means Warn.
type GuardChecks struct {
	// SystemNamespaces: rules reaching objects in kube-system, or Leases in
	// kube-node-lease, that no selector or match condition excludes.
	// +optional
	SystemNamespaces GuardCheckMode `json:"systemNamespaces,omitempty"`
	// ReviewResources: rules reaching TokenReviews, SubjectAccessReviews and the other
	// virtual authentication and authorization resources.
	// +optional
	ReviewResources GuardCheckMode `json:"reviewResources,omitempty"`
	// SelfIntercept: failurePolicy Fail with a service in a namespace whose pods the
	// webhook's own rules intercept.
	// +optional
	SelfIntercept GuardCheckMode `json:"selfIntercept,omitempty"`
	// Timeout: timeoutSeconds above TimeoutThresholdSeconds.
	// +optional
	Timeout GuardCheckMode `json:"timeout,omitempty"`
	// CatchAll: rules over every group, resource and operation with failurePolicy Fail.
	// +optional
	CatchAll GuardCheckMode `json:"catchAll,omitempty"`
	// Chain: a resource whose worst-case webhook time exceeds RequestBudgetSeconds.
	// +optional
	Chain GuardCheckMode `json:"chain,omitempty"`
}
