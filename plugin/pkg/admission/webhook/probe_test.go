package webhook

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/component-base/metrics/testutil"
)

// TestProberBounds: a sampled call that finds every probe slot busy is not probed but
// counted as skipped; calls not sampled, and webhooks with side effects, are not counted at
// all. Nothing blocks.
func TestProberBounds(t *testing.T) {
	metrics := NewMetrics()
	// Metrics record only once registered.
	testutil.NewFakeKubeRegistry("1.37.0").MustRegister(metrics.probes)
	none, some := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassSome
	p := NewProber(ProbeSettings{OneIn: 2, MaxInFlight: 1}, metrics)
	p.slots <- struct{}{} // the one slot is busy
	hook := &admissionregistrationv1.MutatingWebhook{Name: "busy.example.com", SideEffects: &none}
	for range 4 {
		p.Offer(ProbeCall{Hook: hook})
	}
	p.Offer(ProbeCall{Hook: &admissionregistrationv1.MutatingWebhook{Name: "some.example.com", SideEffects: &some}})
	if got, _ := testutil.GetCounterMetricValue(metrics.probes.WithLabelValues("busy.example.com", ProbeSkipped)); got != 2 {
		t.Errorf("skipped %v probes, want 2 (one call in two sampled, every slot busy)", got)
	}
	if got, _ := testutil.GetCounterMetricValue(metrics.probes.WithLabelValues("some.example.com", ProbeSkipped)); got != 0 {
		t.Errorf("a webhook with side effects was sampled")
	}
	p.Wait()
}
