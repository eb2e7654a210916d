// Package validating is Portcullis's ValidatingAdmissionWebhook: upstream's plugin of that
// name, matching and configuration included, with a dispatch of our own that adds circuit
// breakers and a time budget, serializes each version of the object once for all webhooks,
// and returns at the first denial instead of waiting for every call. It replaces upstream's
// plugin under the same name (see pkg/admission).
package validating

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
const PluginName = "ValidatingAdmissionWebhook"

// stepType is the step label upstream's webhook metrics give validating webhooks.
const stepType = "validating"

// Register registers the plugin under upstream's name; the registry makes sure upstream's
// own is not registered beside it.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(configFile io.Reader) (admission.Interface, error) {
		return NewValidatingAdmissionWebhook(configFile)
	})
}

// Plugin dispatches to validating webhooks.
type Plugin struct {
	*generic.Webhook
	settings webhook.Settings
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ admission.InitializationValidator      = &Plugin{}
	_ initializer.WantsManifestLoaders       = &Plugin{}
	_ initializer.WantsExternalKubeClientSet = &Plugin{}
)

// NewValidatingAdmissionWebhook reads the plugin's configuration: upstream's WebhookAdmissionConfiguration (stock
// behaviour) or our WebhookDispatchConfiguration.
func NewValidatingAdmissionWebhook(configFile io.Reader) (*Plugin, error) {
	p := &Plugin{}
	var err error
	p.Webhook, p.settings, err = webhook.NewWebhook(PluginName, stepType, configFile, configuration.NewValidatingWebhookConfigurationManager,
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
	if loaders == nil || loaders.LoadValidatingWebhookManifests == nil {
		return
	}
	load := source.ValidatingWebhookLoadFunc(loaders.LoadValidatingWebhookManifests)
	p.Webhook.SetStaticSourceFactory(func(dir string) (generic.ReloadableSource, error) {
		src := source.NewValidatingSource(dir, p.Webhook.GetAPIServerID(), load)
		if err := src.LoadInitial(); err != nil {
			return nil, err
		}
		return src, nil
	})
}

// Validate calls the validating webhooks that match the request.
func (p *Plugin) Validate(ctx context.Context, attr admission.Attributes, o admission.ObjectInterfaces) error {
	return p.Webhook.Dispatch(ctx, attr, o)
}
