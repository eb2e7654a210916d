package webhook

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// legacyKind heads a webhook plugin's entry in our kind of earlier releases.
const legacyKind = "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n"

func TestLoadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name        string
		config      string
		nilReader   bool
		wantErr     []string
		wantBreaker *BreakerSettings
		wantBudget  *BudgetSettings
		// validating: the entry is ValidatingAdmissionWebhook's.
		validating bool
		wantEarly  bool
		// wantOurs: the entry asks for our dispatch.
		wantOurs bool
		// wantUpstream is a fragment of what upstream's loader is handed; "" for nothing.
		wantUpstream string
	}{
		{name: "no entry: stock", nilReader: true},
		{
			name:         "upstream's kind is handed over unchanged",
			config:       "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
			wantUpstream: "kind: WebhookAdmissionConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml",
		},
		{
			name:         "ours, empty: stock behaviour",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n",
			wantUpstream: `"kind":"WebhookAdmissionConfiguration"`,
		},
		{
			name:         "ours, kubeConfigFile carried to upstream",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
			wantUpstream: `"kubeConfigFile":"/etc/k/webhooks.yaml"`,
		},
		{
			name:         "ours, defaults",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker: {}\ntimeBudget: {}\n",
			wantBreaker:  &BreakerSettings{FailureThreshold: 5, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
			wantBudget:   &BudgetSettings{DeadlineMargin: 2 * time.Second},
			wantOurs:     true,
			wantUpstream: `"apiVersion":"apiserver.config.k8s.io/v1"`,
		},
		{
			name:         "ours, early exit alone",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nearlyExit: true\n",
			validating:   true,
			wantEarly:    true,
			wantOurs:     true,
			wantUpstream: `"kind":"WebhookAdmissionConfiguration"`,
		},
		{
			name:    "early exit is the validating plugin's only",
			config:  "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nearlyExit: true\n",
			wantErr: []string{"earlyExit", "one after another"},
		},
		{
			name:         "ours, the example",
			config:       legacyKind + portcullisconfig.ExampleDispatchSettings,
			wantBreaker:  &BreakerSettings{FailureThreshold: 5, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
			wantBudget:   &BudgetSettings{DeadlineMargin: 2 * time.Second},
			wantOurs:     true,
			wantUpstream: `"kind":"WebhookAdmissionConfiguration"`,
		},
		{
			name:         "ours, the validating example",
			config:       legacyKind + portcullisconfig.ExampleValidatingDispatchSettings,
			validating:   true,
			wantBreaker:  &BreakerSettings{FailureThreshold: 5, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
			wantBudget:   &BudgetSettings{DeadlineMargin: 2 * time.Second},
			wantEarly:    true,
			wantOurs:     true,
			wantUpstream: `"kind":"WebhookAdmissionConfiguration"`,
		},
		{
			name:         "ours, set",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  failureThreshold: 2\n  initialBackoff: 200ms\n  maxBackoff: 5m\ntimeBudget:\n  deadlineMargin: 500ms\n  maxDuration: 15s\n",
			wantBreaker:  &BreakerSettings{FailureThreshold: 2, InitialBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Minute},
			wantBudget:   &BudgetSettings{DeadlineMargin: 500 * time.Millisecond, MaxDuration: 15 * time.Second},
			wantOurs:     true,
			wantUpstream: `"kind":"WebhookAdmissionConfiguration"`,
		},
		{
			name:         "a long initial backoff raises the default cap",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  initialBackoff: 1m\n",
			wantBreaker:  &BreakerSettings{FailureThreshold: 5, InitialBackoff: time.Minute, MaxBackoff: time.Minute},
			wantOurs:     true,
			wantUpstream: `"kind"`,
		},
		{
			name:    "unknown field, named",
			config:  "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreakers: {}\n",
			wantErr: []string{"circuitBreakers"},
		},
		{
			name:    "unknown kind of ours",
			config:  "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\n",
			wantErr: []string{"want admission.portcullis.io/v1alpha1, Kind=WebhookDispatchConfiguration"},
		},
		{
			name:    "bad values, each named",
			config:  "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: relative.yaml\ncircuitBreaker:\n  failureThreshold: 0\n  initialBackoff: 1ms\n  maxBackoff: 2h\ntimeBudget:\n  deadlineMargin: 1m\n  maxDuration: 100ms\n",
			wantErr: []string{"kubeConfigFile", "circuitBreaker.failureThreshold", "circuitBreaker.initialBackoff", "circuitBreaker.maxBackoff", "timeBudget.deadlineMargin", "timeBudget.maxDuration"},
		},
		{
			name:    "max backoff below the initial",
			config:  "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  initialBackoff: 10s\n  maxBackoff: 1s\n",
			wantErr: []string{"circuitBreaker.maxBackoff", "must be from 10s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader
			if !tc.nilReader {
				r = strings.NewReader(tc.config)
			}
			cfg, err := loadEntry(tc.validating, r)
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
			if !equalPtr(cfg.Breaker, tc.wantBreaker) {
				t.Errorf("breaker = %+v, want %+v", cfg.Breaker, tc.wantBreaker)
			}
			if !equalPtr(cfg.Budget, tc.wantBudget) {
				t.Errorf("budget = %+v, want %+v", cfg.Budget, tc.wantBudget)
			}
			if cfg.EarlyExit != tc.wantEarly || cfg.Ours() != tc.wantOurs {
				t.Errorf("early exit %v, ours %v; want %v, %v", cfg.EarlyExit, cfg.Ours(), tc.wantEarly, tc.wantOurs)
			}
			if tc.wantUpstream == "" {
				if cfg.Upstream != nil {
					t.Errorf("upstream's loader is handed an entry; want none")
				}
				return
			}
			upstream, err := io.ReadAll(cfg.Upstream)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(upstream), tc.wantUpstream) {
				t.Errorf("upstream's loader is handed %q, want it to contain %q", upstream, tc.wantUpstream)
			}
		})
	}
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// loadEntry reads a webhook plugin's own entry as the plugin's New does, with no Portcullis
// entry.
func loadEntry(validating bool, r io.Reader) (*Configuration, error) {
	upstream, legacy, err := portcullisconfig.WebhookEntry(r, validating)
	if err != nil {
		return nil, err
	}
	return NewConfiguration(upstream, nil, legacy, validating), nil
}
