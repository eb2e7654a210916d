package v1alpha1

import (
	"reflect"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

const (
	// DefaultTimeoutThresholdSeconds is the largest timeoutSeconds the guard's timeout check
	// accepts by default: the good practices ask for a small timeout, and the API's own
	// default (10 s) is twice this.
	DefaultTimeoutThresholdSeconds int32 = 5
	// DefaultRequestBudgetSeconds is the time a request may spend in webhooks by default:
	// kube-apiserver's 60 s request timeout is cut to 34 s for webhooks by the clients that
	// matter most (kubectl's and controllers' defaults), so a chain above it times out.
	DefaultRequestBudgetSeconds int32 = 34
)

// SetDefaults_WebhookConfigurationGuardConfiguration fills what the configuration leaves
// out: every check Warn (a guard turned on must not break existing deploy tooling), the 5 s
// timeout threshold and the 34 s budget.
func SetDefaults_WebhookConfigurationGuardConfiguration(cfg *admissionv1alpha1.WebhookConfigurationGuardConfiguration) {
	// Every check, whatever its name: a check added to GuardChecks is Warn by default too.
	checks := reflect.ValueOf(&cfg.Checks).Elem()
	for i := range checks.NumField() {
		if mode := checks.Field(i); mode.Type() == reflect.TypeFor[admissionv1alpha1.GuardCheckMode]() && mode.String() == "" {
			mode.SetString(string(admissionv1alpha1.GuardCheckModeWarn))
		}
	}
	if cfg.TimeoutThresholdSeconds == nil {
		v := DefaultTimeoutThresholdSeconds
		cfg.TimeoutThresholdSeconds = &v
	}
	if cfg.RequestBudgetSeconds == nil {
		v := DefaultRequestBudgetSeconds
		cfg.RequestBudgetSeconds = &v
	}
}
