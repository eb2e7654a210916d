//go:build !kube1.35

package mutating

import (
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/manifest/source"
)

// Static webhook manifests (staticManifestsDir) came with Kubernetes 1.36.

var _ initializer.WantsManifestLoaders = &Plugin{}

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
