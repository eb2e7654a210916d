//go:build !kube1.35

package validating

import (
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/manifest/source"
)

// Static webhook manifests (staticManifestsDir) came with Kubernetes 1.36.

var _ initializer.WantsManifestLoaders = &Plugin{}

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
