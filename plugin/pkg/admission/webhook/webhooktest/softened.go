package webhooktest

import "testing"

// SoftenedCounts are the samples a softened webhook's denial moves, or must not: our
// would-deny count, and upstream's rejection count and latency histogram by verdict.
type SoftenedCounts struct {
	WouldDeny, Rejections, RejectedLatency, AdmittedLatency uint64
}

// SoftenedCountsOf reads the SoftenedCounts of the webhook name.
func SoftenedCountsOf(t testing.TB, name string) SoftenedCounts {
	t.Helper()
	latency := func(rejected string) uint64 {
		return SampleCount(t, "apiserver_admission_webhook_admission_duration_seconds", map[string]string{"name": name, "rejected": rejected})
	}
	return SoftenedCounts{
		WouldDeny:       SampleCount(t, "portcullis_admission_webhook_would_deny_total", map[string]string{"name": name, "outcome": "would_deny"}),
		Rejections:      SampleCount(t, "apiserver_admission_webhook_rejection_count", map[string]string{"name": name}),
		RejectedLatency: latency("true"),
		AdmittedLatency: latency("false"),
	}
}

// CheckDenialNotRejected fails unless, from before to after, the webhook's denial was
// counted once as a would-deny and its call once as an admitted one, and upstream's
// rejection metrics did not move: the request was not rejected.
func CheckDenialNotRejected(t testing.TB, before, after SoftenedCounts) {
	t.Helper()
	if got := after.WouldDeny - before.WouldDeny; got != 1 {
		t.Fatalf("would_deny count rose by %d, want 1: the webhook did not deny", got)
	}
	if got := after.Rejections - before.Rejections; got != 0 {
		t.Errorf("apiserver_admission_webhook_rejection_count rose by %d for a softened webhook, want 0", got)
	}
	if got := after.RejectedLatency - before.RejectedLatency; got != 0 {
		t.Errorf("admission_duration_seconds{rejected=true} rose by %d, want 0", got)
	}
	if got := after.AdmittedLatency - before.AdmittedLatency; got != 1 {
		t.Errorf("admission_duration_seconds{rejected=false} rose by %d, want 1", got)
	}
}
