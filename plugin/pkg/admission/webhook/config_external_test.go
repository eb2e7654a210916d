package webhook_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// TestNewConfigurationTakesThePortcullisEntry: the Portcullis entry's settings reach the
// dispatch (maxWait included), a plugin the entry does not set stays upstream's, and the trace
// alone moves no plugin onto our dispatch.
func TestNewConfigurationTakesThePortcullisEntry(t *testing.T) {
	const key = "{configuration: policy, webhook: require-owner.policy.example.com"
	config := webhooktest.LoadPortcullisEntry(t, "enforcementModes:\n- "+key+", modes: [Audit], maxWait: 3s}\n", webhook.ValidatingPlugin)
	cfg := webhook.NewConfiguration(nil, config, webhook.ValidatingPlugin)
	hook := webhook.HookKey{Configuration: "policy", Webhook: "require-owner.policy.example.com"}
	if got := cfg.MaxWaits[hook]; !cfg.Ours() || got != 3*time.Second || !cfg.Modes.Of(hook.Configuration, hook.Webhook).Audit {
		t.Errorf("ours %v, maxWait %v, modes %+v; want ours, 3s in Audit", cfg.Ours(), got, cfg.Modes)
	}
	if cfg := webhook.NewConfiguration(nil, config, webhook.MutatingPlugin); cfg.Ours() {
		t.Errorf("the mutating plugin, which the entry does not set, is on our dispatch: %+v", cfg)
	}
	if cfg := webhook.NewConfiguration(nil, nil, webhook.ValidatingPlugin); cfg.Ours() {
		t.Errorf("without a Portcullis entry the plugin is on our dispatch: %+v", cfg)
	}
	config.WebhookDispatch.Mutating = &portcullisapi.WebhookDispatchSettings{}
	config.AdmissionTrace = &portcullisapi.AdmissionTrace{Audit: true}
	if cfg := webhook.NewConfiguration(nil, config, webhook.MutatingPlugin); cfg.Ours() {
		t.Errorf("the trace and empty settings moved the mutating plugin onto our dispatch: %+v", cfg)
	}
}

// TestEverySettingReachesTheDispatch: each setting of webhookDispatch, set alone, puts the
// plugin on our dispatch (the internal settings' Ours, which the start-up log and the trace
// read, and the plugin's) and reaches a part of it: one rule of what is ours, not two.
func TestEverySettingReachesTheDispatch(t *testing.T) {
	alone := map[string]struct {
		yaml       string
		validating bool
	}{
		"circuitBreaker":   {"circuitBreaker: {}", false},
		"timeBudget":       {"timeBudget: {}", false},
		"earlyExit":        {"earlyExit: true", true},
		"enforcementModes": {"enforcementModes: [{configuration: c, webhook: w.example.com, modes: [Warn]}]", false},
		"idempotencyProbe": {"idempotencyProbe: {oneIn: 1}", false},
	}
	fields := reflect.TypeFor[admissionv1alpha1.WebhookDispatchSettings]()
	for i := range fields.NumField() {
		name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
		setting, ok := alone[name]
		if !ok {
			t.Errorf("webhookDispatch's field %s is new: say here how to set it alone", name)
			continue
		}
		config := webhooktest.LoadPortcullisEntry(t, setting.yaml, setting.validating)
		cfg := webhook.NewConfiguration(nil, config, setting.validating)
		if !config.WebhookDispatch.Of(setting.validating).Ours() || !cfg.Ours() {
			t.Errorf("%s alone: ours %v (settings) and %v (plugin), want both", name, config.WebhookDispatch.Of(setting.validating).Ours(), cfg.Ours())
		}
		if cfg.Breaker == nil && cfg.Budget == nil && !cfg.EarlyExit && len(cfg.Modes) == 0 && cfg.Probe == nil {
			t.Errorf("%s alone puts the plugin on our dispatch but reaches none of it", name)
		}
	}
}
