package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	metav1.TypeMeta

	// Checks sets the mode of each check; a check left out is Warn.
	Checks GuardChecks

	// TimeoutThresholdSeconds is the largest timeoutSeconds the timeout check accepts.
	// Defaults to 5.
	TimeoutThresholdSeconds *int32

	// RequestBudgetSeconds is the time a request may spend in webhooks, which the chain
	// check compares each resource's worst case with. Defaults to 34 (the server's request
	// timeout, less what the rest of the request needs); set it to the webhook dispatch
	// budget when one is configured.
	RequestBudgetSeconds *int32
}

// GuardChecks holds the mode of each check of the WebhookConfigurationGuard plugin. Each
// is Warn, Deny or Off; empty means Warn.
type GuardChecks struct {
	// SystemNamespaces: rules reaching objects in kube-system, or Leases in
	// kube-node-lease, that no selector or match condition excludes.
	SystemNamespaces GuardCheckMode
	// ReviewResources: rules reaching TokenReviews, SubjectAccessReviews and the other
	// virtual authentication and authorization resources.
	ReviewResources GuardCheckMode
	// SelfIntercept: failurePolicy Fail with a service in a namespace whose pods the
	// webhook's own rules intercept.
	SelfIntercept GuardCheckMode
	// Timeout: timeoutSeconds above TimeoutThresholdSeconds.
	Timeout GuardCheckMode
	// CatchAll: rules over every group, resource and operation with failurePolicy Fail.
	CatchAll GuardCheckMode
	// Chain: a resource whose worst-case webhook time exceeds RequestBudgetSeconds.
	Chain GuardCheckMode
}
