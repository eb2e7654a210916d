package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// validWebhookConfigurationGuard is the defaulted configuration.
func validWebhookConfigurationGuard() *admission.WebhookConfigurationGuardConfiguration {
	return &admission.WebhookConfigurationGuardConfiguration{
		Checks: admission.GuardChecks{
			SystemNamespaces: admission.GuardCheckModeWarn, ReviewResources: admission.GuardCheckModeWarn, SelfIntercept: admission.GuardCheckModeWarn,
			Timeout: admission.GuardCheckModeWarn, CatchAll: admission.GuardCheckModeWarn, Chain: admission.GuardCheckModeWarn,
		},
		TimeoutThresholdSeconds: ptr.To[int32](5),
		RequestBudgetSeconds:    ptr.To[int32](34),
	}
}

func TestValidateWebhookConfigurationGuardConfiguration(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admission.WebhookConfigurationGuardConfiguration)
		want   []string // each error, whole
	}{
		{name: "valid", mutate: func(*admission.WebhookConfigurationGuardConfiguration) {}},
		{name: "every mode, the extremes", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) {
			c.Checks.Timeout, c.Checks.Chain, c.Checks.SystemNamespaces = admission.GuardCheckModeDeny, admission.GuardCheckModeOff, admission.GuardCheckModeDeny
			c.TimeoutThresholdSeconds, c.RequestBudgetSeconds = ptr.To[int32](30), ptr.To[int32](1)
		}},
		{name: "the lowest threshold", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) {
			c.TimeoutThresholdSeconds = ptr.To[int32](1)
		}},
		{name: "unknown modes", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) {
			c.Checks.Chain, c.Checks.SystemNamespaces, c.Checks.CatchAll = "Block", "warn", ""
		}, want: []string{
			`checks.systemNamespaces: Unsupported value: "warn": supported values: "Warn", "Deny", "Off"`,
			`checks.catchAll: Unsupported value: "": supported values: "Warn", "Deny", "Off"`,
			`checks.chain: Unsupported value: "Block": supported values: "Warn", "Deny", "Off"`,
		}},
		{name: "threshold above 30", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) {
			c.TimeoutThresholdSeconds = ptr.To[int32](31)
		}, want: []string{`timeoutThresholdSeconds: Invalid value: 31: must be between 1 and 30 (the largest timeoutSeconds a webhook may have)`}},
		{name: "threshold 0", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) {
			c.TimeoutThresholdSeconds = ptr.To[int32](0)
		}, want: []string{`timeoutThresholdSeconds: Invalid value: 0: must be between 1 and 30 (the largest timeoutSeconds a webhook may have)`}},
		{name: "zero budget", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) { c.RequestBudgetSeconds = ptr.To[int32](0) },
			want: []string{`requestBudgetSeconds: Invalid value: 0: must be at least 1`}},
		{name: "not defaulted", mutate: func(c *admission.WebhookConfigurationGuardConfiguration) {
			c.TimeoutThresholdSeconds, c.RequestBudgetSeconds = nil, nil
		}, want: []string{
			`timeoutThresholdSeconds: Invalid value: "<nil>": must be between 1 and 30 (the largest timeoutSeconds a webhook may have)`,
			`requestBudgetSeconds: Invalid value: "<nil>": must be at least 1`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validWebhookConfigurationGuard()
			tc.mutate(cfg)
			var got []string
			for _, err := range ValidateWebhookConfigurationGuardConfiguration(cfg, nil) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateWebhookConfigurationGuardConfigurationPath: the errors name the fields under
// fldPath.
func TestValidateWebhookConfigurationGuardConfigurationPath(t *testing.T) {
	cfg := validWebhookConfigurationGuard()
	cfg.Checks.Timeout = "Block"
	cfg.RequestBudgetSeconds = ptr.To[int32](-1)
	errs := ValidateWebhookConfigurationGuardConfiguration(cfg, field.NewPath("configuration"))
	want := []string{"FieldValueNotSupported configuration.checks.timeout", "FieldValueInvalid configuration.requestBudgetSeconds"}
	if diff := cmp.Diff(want, fieldErrors(errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
