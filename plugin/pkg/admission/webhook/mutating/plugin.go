// Package mutating is Portcullis's MutatingAdmissionWebhook, registered under upstream's name. With no
// dispatch settings of ours in its admission config entry it is upstream's own plugin,
// untouched. With them, it is upstream's matching and configuration (generic.Webhook) with a
// dispatch of our own: circuit breakers, a time budget, one serialization of the object per change,
// per-webhook enforcement modes (a webhook in Audit is a shadow), the idempotency probe, and
// each call a step of the admission trace.
package mutating

import (
	"context"
	"io"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/configuration"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	upstreammutating "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// PluginName is upstream's name, which this plugin takes over.
const PluginName = "MutatingAdmissionWebhook"

// stepType is the step label upstream's webhook metrics give mutating webhooks.
const stepType = "admit"

// Register registers the plugin under upstream's name; the registry makes sure upstream's
// own registration is not made beside it. entry returns, when the plugin is built, the entry
// upstream's constructor reads (from the plugin's own, configFile) and the admission config
// file's Portcullis entry, as portcullisconfig.Load read it (nil: none).
func Register(plugins *admission.Plugins, entry func(configFile io.Reader) (io.Reader, *portcullisapi.PortcullisConfiguration)) {
	plugins.Register(PluginName, func(configFile io.Reader) (admission.Interface, error) {
		return New(entry(configFile))
	})
}

// New builds the plugin from upstream's entry and the Portcullis entry: upstream's own plugin
// (stock, byte for byte) unless the Portcullis entry's webhookDispatch (or the form of earlier
// releases, which Load converted into it) turns a setting of our dispatch on, and ours then.
func New(upstream io.Reader, config *portcullisapi.PortcullisConfiguration) (admission.Interface, error) {
	cfg := webhook.NewConfiguration(upstream, config, webhook.MutatingPlugin)
	if !cfg.Ours() {
		upstream, err := upstreammutating.NewMutatingWebhook(cfg.Upstream)
		if err != nil {
			return nil, err
		}
		return upstream, nil
	}
	return newPlugin(cfg)
}

// Plugin dispatches to mutating webhooks with our dispatch.
type Plugin struct {
	*generic.Webhook
	settings webhook.Settings
}

var (
	_ admission.MutationInterface            = &Plugin{}
	_ admission.InitializationValidator      = &Plugin{}
	_ initializer.WantsExternalKubeClientSet = &Plugin{}
	_ initializer.WantsDrainedNotification   = &Plugin{}
)

func newPlugin(cfg *webhook.Configuration) (*Plugin, error) {
	p := &Plugin{}
	var err error
	p.Webhook, p.settings, err = webhook.NewWebhook(stepType, cfg, configuration.NewMutatingWebhookConfigurationManager,
		func(cm *webhookutil.ClientManager, s webhook.Settings) generic.Dispatcher {
			return &dispatcher{cm: cm, plugin: p, settings: s}
		})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// SetDrainedNotification hands the notification to upstream's part, and drops (counting
// them) the shadow calls still queued when it comes.
func (p *Plugin) SetDrainedNotification(drained <-chan struct{}) {
	webhook.SetDrainedNotification(p.Webhook, p.settings.Shadows, drained)
}

// SetExternalKubeInformerFactory hands the factory to upstream's part, and gives the breakers
// the configurations' UIDs from the informer upstream's part watches them with.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	p.Webhook.SetExternalKubeInformerFactory(f)
	lister := f.Admissionregistration().V1().MutatingWebhookConfigurations().Lister()
	p.settings.Guard.Breakers.SetConfigurationUIDs(func(name string) string {
		if cfg, err := lister.Get(name); err == nil {
			return string(cfg.UID)
		}
		return ""
	})
}

// Admit calls the mutating webhooks that match the request.
func (p *Plugin) Admit(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	return p.Webhook.Dispatch(ctx, attr, o)
}
