//go:build kube1.35

package webhook

import "k8s.io/apiserver/pkg/admission/plugin/webhook/generic"

// Kubernetes 1.35: upstream's webhook plugins take no drained notification.
func setUpstreamDrainedNotification(*generic.Webhook, <-chan struct{}) {}
