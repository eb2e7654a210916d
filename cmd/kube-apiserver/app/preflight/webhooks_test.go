package preflight

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIdempotencyFindings(t *testing.T) {
	mutating := []admissionregistrationv1.MutatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "inject"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "counter.example.com"}, {Name: "fixed.example.com"}}},
	}
	metrics := `# HELP portcullis_admission_webhook_idempotency_probes_total [ALPHA] Idempotency probes.
# TYPE portcullis_admission_webhook_idempotency_probes_total counter
portcullis_admission_webhook_idempotency_probes_total{name="counter.example.com",result="not_idempotent"} 3
portcullis_admission_webhook_idempotency_probes_total{name="counter.example.com",result="idempotent"} 1
portcullis_admission_webhook_idempotency_probes_total{name="fixed.example.com",result="idempotent"} 7
portcullis_admission_webhook_idempotency_probes_total{name="gone.example.com",result="not_idempotent"} 1
`
	findings, err := idempotencyFindings([]byte(metrics), mutating, "https://10.0.0.1:6443")
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 2 {
		t.Fatalf("findings %+v, want counter.example.com's and gone.example.com's", findings)
	}
	for i, want := range [][]string{
		{"mutating webhook counter.example.com (MutatingWebhookConfiguration inject) is not idempotent", "in 3 of 4 idempotency probes of the server at https://10.0.0.1:6443"},
		{"mutating webhook gone.example.com (no MutatingWebhookConfiguration has it any more)", "in 1 of 1 "},
	} {
		for _, w := range want {
			if !strings.Contains(findings[i].Message, w) || findings[i].Deny {
				t.Errorf("finding %d %+v: want a Warn containing %q", i, findings[i], w)
			}
		}
	}
	if findings, err := idempotencyFindings([]byte("apiserver_request_total 1\n"), mutating, ""); err != nil || len(findings) != 0 {
		t.Errorf("without the probe's metric: %v, %v; want no finding", findings, err)
	}
	if _, err := idempotencyFindings([]byte("{not metrics"), mutating, ""); err == nil {
		t.Errorf("unparseable metrics gave no error")
	}
}
