//go:build !kube1.35

package webhook

import "k8s.io/apiserver/pkg/admission/plugin/webhook/generic"

// Kubernetes 1.36 and later: upstream's webhook plugins want the drained notification (their
// static manifests' watch stops on it).
func setUpstreamDrainedNotification(w *generic.Webhook, drained <-chan struct{}) {
	w.SetDrainedNotification(drained)
}
