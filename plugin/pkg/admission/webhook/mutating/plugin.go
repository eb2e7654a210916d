// Package mutating is Portcullis's MutatingAdmissionWebhook: upstream's plugin of that name,
// matching and configuration included, with a dispatch loop of our own that adds circuit
// breakers and a time budget and serializes the object once per change instead of once per
// webhook. It replaces upstream's plugin under the same name (see pkg/admission).
package mutating

import (
	"context"
	"io"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/configuration"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/manifest/source"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// PluginName is upstream's name, which this plugin takes over.
const PluginName = "MutatingAdmissionWebhook"

// stepType is the step label upstream's webhook metrics give mutating webhooks.
const stepType = "admit"

// Register registers the plugin under upstream's name; the registry makes sure upstream's
// own is not registered beside it.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(configFile io.Reader) (admission.Interface, error) {
		return NewMutatingWebhook(configFile)
	})
}

// Plugin dispatches to mutating webhooks.
type Plugin struct {
	*generic.Webhook
	settings webhook.Settings
}

var (
	_ admission.MutationInterface            = &Plugin{}
	_ admission.InitializationValidator      = &Plugin{}
	_ initializer.WantsManifestLoaders       = &Plugin{}
	_ initializer.WantsExternalKubeClientSet = &Plugin{}
)

// NewMutatingWebhook reads the plugin's configuration: upstream's WebhookAdmissionConfiguration (stock
// behaviour) or our WebhookDispatchConfiguration.
func NewMutatingWebhook(configFile io.Reader) (*Plugin, error) {
	p := &Plugin{}
	var err error
	p.Webhook, p.settings, err = webhook.NewWebhook(PluginName, stepType, configFile, configuration.NewMutatingWebhookConfigurationManager,
		func(cm *webhookutil.ClientManager, s webhook.Settings) generic.Dispatcher {
			return &dispatcher{cm: cm, plugin: p, settings: s}
		})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// SetManifestLoaders serves webhooks from static manifests, as upstream's plugin does.
func (p *Plugin) SetManifestLoaders(loaders *initializer.ManifestLoaders) {
	if loaders == nil || loaders.LoadMutatingWebhookManifests == nil {
		return
	}
	load := source.MutatingWebhookLoadFunc(loaders.LoadMutatingWebhookManifests)
	p.Webhook.SetStaticSourceFactory(func(dir string) (generic.ReloadableSource, error) {
		src := source.NewMutatingSource(dir, p.Webhook.GetAPIServerID(), load)
		if err := src.LoadInitial(); err != nil {
			return nil, err
		}
		return src, nil
	})
}

// Admit calls the mutating webhooks that match the request.
func (p *Plugin) Admit(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	return p.Webhook.Dispatch(ctx, attr, o)
}
