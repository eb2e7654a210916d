package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission/configuration"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/clock"
)

func TestNewWebhookWiresTheConfiguration(t *testing.T) {
	// A webhook kubeconfig: 1.35's upstream requires the entry to name one.
	kubeconfig := filepath.Join(t.TempDir(), "webhooks.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ours := "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: " + kubeconfig + "\n"
	for _, tc := range []struct {
		name    string
		config  string
		wantErr []string
		breaker bool
		budget  bool
		early   bool
	}{
		{name: "ours, breaker", config: ours + "circuitBreaker: {}\n", breaker: true},
		{name: "ours, budget", config: ours + "timeBudget: {}\n", budget: true},
		{name: "ours, early exit", config: ours + "earlyExit: true\n", early: true},
		{name: "ours, upstream's error on the kubeconfig", config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: /nonexistent/kubeconfig\nearlyExit: true\n", wantErr: []string{"/nonexistent/kubeconfig"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadEntry(t, ValidatingPlugin, tc.config)
			var given Settings
			w, settings, err := newWebhook("validating", cfg, configuration.NewValidatingWebhookConfigurationManager,
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
				if (s.Guard.Breakers != nil) != tc.breaker || (s.Budget != nil) != tc.budget || s.EarlyExit != tc.early || s.Metrics == nil {
					t.Errorf("settings %s: breakers on %v, budget on %v, early exit %v, metrics %v; want %v, %v, %v, set",
						what, s.Guard.Breakers != nil, s.Budget != nil, s.EarlyExit, s.Metrics, tc.breaker, tc.budget, tc.early)
				}
			}
		})
	}
}
