package webhook

import (
	"io"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission/configuration"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/clock"
)

func TestNewWebhookWiresTheConfiguration(t *testing.T) {
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
		{name: "ours, bad field", config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ntimeBudget: {deadlineMargin: 1h}\n", wantErr: []string{"TestPlugin", "timeBudget.deadlineMargin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader
			if tc.config != "" {
				r = strings.NewReader(tc.config)
			}
			var given Settings
			w, settings, err := newWebhook("TestPlugin", "admit", r, configuration.NewMutatingWebhookConfigurationManager,
				func(_ *webhookutil.ClientManager, s Settings) generic.Dispatcher { given = s; return nil }, NewMetrics(), clock.RealClock{})
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
			if w == nil {
				t.Fatal("no webhook")
			}
			for what, s := range map[string]Settings{"returned": settings, "given to the dispatcher": given} {
				if (s.Guard.Breakers != nil) != tc.breaker || (s.Budget != nil) != tc.budget || s.Metrics == nil {
					t.Errorf("settings %s: breakers on %v, budget on %v, metrics %v; want %v, %v, set", what, s.Guard.Breakers != nil, s.Budget != nil, s.Metrics, tc.breaker, tc.budget)
				}
			}
		})
	}
}
