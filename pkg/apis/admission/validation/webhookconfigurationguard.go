package validation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// maxWebhookTimeoutSeconds is the API's own limit on a webhook's timeoutSeconds: a threshold
// above it would accept every webhook.
const maxWebhookTimeoutSeconds int32 = 30

var guardCheckModes = []admission.GuardCheckMode{admission.GuardCheckModeWarn, admission.GuardCheckModeDeny, admission.GuardCheckModeOff}

// ValidateWebhookConfigurationGuardConfiguration checks the WebhookConfigurationGuard
// plugin's defaulted configuration; fldPath is where it sits (nil: the entry's root).
func ValidateWebhookConfigurationGuardConfiguration(cfg *admission.WebhookConfigurationGuardConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	checksPath := fldPath.Child("checks")
	for _, check := range cfg.Checks.Fields() {
		if !slices.Contains(guardCheckModes, *check.Mode) {
			errs = append(errs, field.NotSupported(checksPath.Child(check.Name), *check.Mode, guardCheckModes))
		}
	}
	if v := cfg.TimeoutThresholdSeconds; v == nil || *v < 1 || *v > maxWebhookTimeoutSeconds {
		errs = append(errs, field.Invalid(fldPath.Child("timeoutThresholdSeconds"), derefInt32(v),
			fmt.Sprintf("must be between 1 and %d (the largest timeoutSeconds a webhook may have)", maxWebhookTimeoutSeconds)))
	}
	if v := cfg.RequestBudgetSeconds; v == nil || *v < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("requestBudgetSeconds"), derefInt32(v), "must be at least 1"))
	}
	return errs
}

// derefInt32 is a setting's value for an error, "<nil>" when it is not set.
func derefInt32(v *int32) any {
	if v == nil {
		return "<nil>"
	}
	return *v
}
