//go:build !kube1.35

package portcullisconfig

import (
	"bytes"

	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
)

// upstreamRequiresKubeConfigFile: since 1.36 upstream's entry may name static manifests
// instead of a kubeconfig.
const upstreamRequiresKubeConfigFile = false

// upstreamKubeConfigFile is the kubeconfig upstream's loader reads from a webhook entry.
func upstreamKubeConfigFile(entry []byte) (string, error) {
	loaded, err := webhookconfig.LoadConfig(bytes.NewReader(entry))
	if err != nil {
		return "", err
	}
	return loaded.KubeConfigFile, nil
}
