package webhook_test

import (
	"testing"
	"time"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/webhooktest"
)

// TestNewConfigurationTakesThePortcullisEntry: the Portcullis entry's settings win over the
// plugin's own entry of earlier releases, reach the dispatch (maxWait included), and the trace
// marks only a plugin that is on our dispatch anyway.
func TestNewConfigurationTakesThePortcullisEntry(t *testing.T) {
	const key = "{configuration: policy, webhook: require-owner.policy.example.com"
	config := webhooktest.LoadPortcullisEntry(t, "enforcementModes:\n- "+key+", modes: [Audit], maxWait: 3s}\n", webhook.ValidatingPlugin)
	legacy := &portcullisapi.WebhookDispatchSettings{EarlyExit: true}
	cfg := webhook.NewConfiguration(nil, config, legacy, webhook.ValidatingPlugin)
	if cfg.EarlyExit || cfg.Legacy {
		t.Errorf("the plugin's own entry was used beside the Portcullis entry: %+v", cfg)
	}
	hook := webhook.HookKey{Configuration: "policy", Webhook: "require-owner.policy.example.com"}
	if got := cfg.MaxWaits[hook]; got != 3*time.Second || !cfg.Modes.Of(hook.Configuration, hook.Webhook).Audit {
		t.Errorf("maxWait %v, modes %+v; want 3s in Audit", got, cfg.Modes)
	}
	if cfg := webhook.NewConfiguration(nil, config, nil, webhook.MutatingPlugin); cfg.Ours() || cfg.Legacy {
		t.Errorf("the mutating plugin, which the entry does not set, is on our dispatch: %+v", cfg)
	}
	if cfg := webhook.NewConfiguration(nil, nil, legacy, webhook.ValidatingPlugin); !cfg.EarlyExit || !cfg.Legacy {
		t.Errorf("without a Portcullis entry the plugin's own entry was not used: %+v", cfg)
	}
	config.AdmissionTrace = &portcullisapi.AdmissionTrace{Audit: true}
	if cfg := webhook.NewConfiguration(nil, config, nil, webhook.ValidatingPlugin); !cfg.Traced {
		t.Error("a traced plugin on our dispatch does not record its webhooks")
	}
	if cfg := webhook.NewConfiguration(nil, config, nil, webhook.MutatingPlugin); cfg.Traced || cfg.Ours() {
		t.Errorf("the trace alone moved the mutating plugin onto our dispatch: %+v", cfg)
	}
}
