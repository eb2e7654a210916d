package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// TestRefusedPluginsAreRefused holds ValidatePluginEnforcement to the refused list: each name
// is refused with its reason. (That each is a plugin upstream registers is pkg/admission's
// TestRefusedEnforcementModesNameUpstreamPlugins.)
func TestRefusedPluginsAreRefused(t *testing.T) {
	if diff := cmp.Diff(sets.List(sets.KeySet(refused)), RefusedPlugins()); diff != "" {
		t.Errorf("RefusedPlugins() differs from the refused list (-list +RefusedPlugins):\n%s", diff)
	}
	for name, reason := range refused {
		errs := ValidatePluginEnforcement([]admission.PluginEnforcement{{Name: name, Modes: []admission.EnforcementMode{admission.EnforcementModeWarn}}}, field.NewPath("enforcementModes"))
		if err := errs.ToAggregate(); err == nil || !strings.Contains(err.Error(), reason) || !strings.Contains(err.Error(), "enforcementModes[0].name") {
			t.Errorf("%s: ValidatePluginEnforcement = %v, want it refused with %q", name, err, reason)
		}
	}
}

// TestMaxWaitValidation: maxWait is 0s to 30s, on a softened webhook only, each error naming
// its field.
func TestMaxWaitValidation(t *testing.T) {
	audit, warn, deny := []admission.EnforcementMode{admission.EnforcementModeAudit}, []admission.EnforcementMode{admission.EnforcementModeWarn}, []admission.EnforcementMode{admission.EnforcementModeDeny}
	for _, tc := range []struct {
		name    string
		modes   []admission.EnforcementMode
		wait    time.Duration
		wantErr string
	}{
		{name: "0s on Audit", modes: audit},
		{name: "30s on Warn", modes: warn, wait: 30 * time.Second},
		{name: "negative", modes: audit, wait: -time.Second, wantErr: "validating.enforcementModes[0].maxWait: Invalid value: \"-1s\": must be from 0s to 30s"},
		{name: "above 30s", modes: audit, wait: 31 * time.Second, wantErr: "must be from 0s to 30s"},
		{name: "on Deny", modes: deny, wait: time.Second, wantErr: "validating.enforcementModes[0].maxWait: Invalid value: \"1s\": only a webhook in Warn or Audit is waited for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := &admission.WebhookDispatchSettings{EnforcementModes: []admission.WebhookEnforcement{{
				Configuration: "policy", Webhook: "require-owner.policy.example.com", Modes: tc.modes, MaxWait: &metav1.Duration{Duration: tc.wait},
			}}}
			errs := ValidateWebhookDispatchSettings(settings, true, field.NewPath("validating"))
			if tc.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if err := errs.ToAggregate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("errors %v, want one containing %q", errs, tc.wantErr)
			}
		})
	}
}
