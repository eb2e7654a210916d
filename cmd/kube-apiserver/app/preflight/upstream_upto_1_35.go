//go:build kube1.35

package preflight

import (
	"io"

	webhookadmissionconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	controlplaneadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
)

// In 1.35 upstream's webhook entry names only a kubeconfig, and the control plane's
// admission initializers are not told the served resources.

// upstreamWebhookKubeConfigFile is the kubeconfig upstream's loader reads from a webhook
// plugin's entry.
func upstreamWebhookKubeConfigFile(entry io.Reader) (string, error) {
	return webhookadmissionconfig.LoadConfig(entry)
}

// controlplaneAdmissionConfig is the control plane's admission configuration preflight
// builds the chains with: loopback goes nowhere.
func controlplaneAdmissionConfig(loopback *rest.Config, factory informers.SharedInformerFactory) *controlplaneadmission.Config {
	return &controlplaneadmission.Config{LoopbackClientConfig: loopback, ExternalInformers: factory}
}
