package webhook

import "k8s.io/apiserver/pkg/admission/plugin/webhook/generic"

// SetDrainedNotification gives upstream's part of a plugin the server's drained notification
// (where its minor takes one, drained_*.go), and drops the shadow calls still queued once it
// comes (Shadows.Drained): counted, not lost without trace.
func SetDrainedNotification(w *generic.Webhook, shadows *Shadows, drained <-chan struct{}) {
	setUpstreamDrainedNotification(w, drained)
	if shadows != nil && drained != nil {
		go func() {
			<-drained
			shadows.Drained()
		}()
	}
}
