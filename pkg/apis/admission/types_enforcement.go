package admission

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnforcementMode says what becomes of a validating admission plugin's denial.
type EnforcementMode string

const (
	// EnforcementModeDeny rejects the request: the plugin's own behaviour. It cannot be
	// combined with another mode.
	EnforcementModeDeny EnforcementMode = "Deny"
	// EnforcementModeWarn admits the request and returns the denial's message to the client
	// as a warning (kubectl prints it).
	EnforcementModeWarn EnforcementMode = "Warn"
	// EnforcementModeAudit admits the request, records the denial's message in the audit
	// event (annotation <plugin>.admission.portcullis.io/would-deny) and counts it in the
	// metric portcullis_admission_enforcement_would_deny_total.
	EnforcementModeAudit EnforcementMode = "Audit"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EnforcementConfiguration sets the enforcement mode of validating admission plugins. It is
// the configuration of the admission config file's entry named EnforcementModes, which is not
// a plugin: a stock kube-apiserver reads entries only for the plugins it enables, so it
// ignores this one, and the same file still starts it.
type EnforcementConfiguration struct {
	metav1.TypeMeta

	// Plugins lists the plugins whose mode is set; a plugin left out denies as it always has.
	Plugins []PluginEnforcement
}

// PluginEnforcement is one plugin's enforcement mode.
type PluginEnforcement struct {
	// Name is the plugin's name, as in --enable-admission-plugins. The plugin must be
	// enabled, must have a validating phase, and must not be one of those refused (see
	// docs/enforcement-modes.md).
	Name string

	// Modes is Deny alone, or Warn, Audit or both. Only the plugin's validating phase is
	// affected: a plugin that also mutates still mutates, and still rejects from its
	// mutating phase.
	Modes []EnforcementMode
}
