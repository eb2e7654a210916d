//go:build !kube1.35

package preflight

import (
	"io"

	webhookadmissionconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
)

// Since 1.36 upstream's webhook entry may name static manifests beside the kubeconfig, and
// the control plane's admission initializers are told the served resources.

// upstreamWebhookKubeConfigFile is the kubeconfig upstream's loader reads from a webhook
// plugin's entry.
func upstreamWebhookKubeConfigFile(entry io.Reader) (string, error) {
	cfg, err := webhookadmissionconfig.LoadConfig(entry)
	if err != nil {
		return "", err
	}
	return cfg.KubeConfigFile, nil
}

// controlplaneAdmissionConfig is the control plane's admission configuration preflight
// builds the chains with: loopback goes nowhere.
func controlplaneAdmissionConfig(loopback *rest.Config, factory informers.SharedInformerFactory) *controlplaneadmission.Config {
	return &controlplaneadmission.Config{
		LoopbackClientConfig: loopback,
		ExternalInformers:    factory,
		APIResourceConfig:    controlplane.DefaultAPIResourceConfigSource(),
	}
}
