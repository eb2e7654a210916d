package validating

import (
	"io"
	"strings"
	"testing"
)

func TestConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  string
		wantErr []string
		breaker bool
		budget  bool
	}{
		{name: "none"},
		{name: "upstream's kind", config: "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: \"\"\n"},
		{name: "upstream's kind, upstream's error", config: "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: relative\n", wantErr: []string{"kubeConfigFile", "absolute"}},
		{name: "ours, stock behaviour", config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n"},
		{name: "ours, breaker", config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker: {}\n", breaker: true},
		{name: "ours, budget", config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ntimeBudget: {}\n", budget: true},
		{name: "ours, bad field", config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ntimeBudget: {deadlineMargin: 1h}\n", wantErr: []string{"ValidatingAdmissionWebhook", "timeBudget.deadlineMargin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader
			if tc.config != "" {
				r = strings.NewReader(tc.config)
			}
			p, err := NewValidatingAdmissionWebhook(r)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p.guard.Breakers != nil) != tc.breaker || (p.budget != nil) != tc.budget {
				t.Errorf("breakers on %v, budget on %v; want %v, %v", p.guard.Breakers != nil, p.budget != nil, tc.breaker, tc.budget)
			}
		})
	}
}
