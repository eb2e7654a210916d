package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// Defaults of the webhook dispatch's settings (webhookDispatch.mutating and .validating, and
// the legacy WebhookDispatchConfiguration): each applies once its part is set.
const (
	DefaultFailureThreshold int32 = 5
	DefaultInitialBackoff         = time.Second
	DefaultMaxBackoff             = 30 * time.Second
	DefaultDeadlineMargin         = 2 * time.Second
	DefaultProbeMaxInFlight int32 = 2
)

// SetDefaults_WebhookCircuitBreaker fills what a set circuitBreaker leaves out; maxBackoff is
// never below initialBackoff.
func SetDefaults_WebhookCircuitBreaker(b *admissionv1alpha1.WebhookCircuitBreaker) {
	if b.FailureThreshold == nil {
		v := DefaultFailureThreshold
		b.FailureThreshold = &v
	}
	if b.InitialBackoff == nil {
		b.InitialBackoff = &metav1.Duration{Duration: DefaultInitialBackoff}
	}
	if b.MaxBackoff == nil {
		b.MaxBackoff = &metav1.Duration{Duration: max(DefaultMaxBackoff, b.InitialBackoff.Duration)}
	}
}

// SetDefaults_WebhookTimeBudget fills a set timeBudget's deadlineMargin.
func SetDefaults_WebhookTimeBudget(b *admissionv1alpha1.WebhookTimeBudget) {
	if b.DeadlineMargin == nil {
		b.DeadlineMargin = &metav1.Duration{Duration: DefaultDeadlineMargin}
	}
}

// SetDefaults_WebhookIdempotencyProbe fills a set idempotencyProbe's maxInFlight.
func SetDefaults_WebhookIdempotencyProbe(p *admissionv1alpha1.WebhookIdempotencyProbe) {
	if p.MaxInFlight == nil {
		v := DefaultProbeMaxInFlight
		p.MaxInFlight = &v
	}
}
