//go:build kube1.35

package portcullisconfig

import (
	"bytes"

	webhookconfig "k8s.io/apiserver/pkg/admission/plugin/webhook/config"
)

// upstreamRequiresKubeConfigFile: 1.35's loader refuses an entry without an absolute
// kubeConfigFile; ours hands the entry on, and the server stops there, as stock does.
const upstreamRequiresKubeConfigFile = true

// upstreamKubeConfigFile is the kubeconfig upstream's loader reads from a webhook entry.
func upstreamKubeConfigFile(entry []byte) (string, error) {
	return webhookconfig.LoadConfig(bytes.NewReader(entry))
}
