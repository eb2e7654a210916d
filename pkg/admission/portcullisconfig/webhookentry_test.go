package portcullisconfig

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// legacyKind heads a webhook plugin's entry in our kind of earlier releases.
const legacyKind = "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n"

// TestWebhookEntry converts a webhook plugin's own entry as Load and preflight do: upstream's
// kind unchanged, ours into upstream's kind and its dispatch settings, defaulted and validated.
func TestWebhookEntry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		config      string
		wantErr     []string
		wantBreaker *admission.WebhookCircuitBreaker
		wantBudget  *admission.WebhookTimeBudget
		// validating: the entry is ValidatingAdmissionWebhook's.
		validating bool
		wantEarly  bool
		// wantOurs: the entry asks for our dispatch.
		wantOurs bool
		// wantUpstream is a fragment of what upstream's loader is handed; "": no entry (our
		// kind without kubeConfigFile or staticManifestsDir, as a stock file without one).
		wantUpstream string
	}{
		{
			name:         "upstream's kind is handed over unchanged",
			config:       "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
			wantUpstream: "kind: WebhookAdmissionConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml",
		},
		{
			name:   "ours, empty: stock behaviour",
			config: "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n",
		},
		{
			name:         "ours, kubeConfigFile carried to upstream",
			config:       "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
			wantUpstream: `"kubeConfigFile":"/etc/k/webhooks.yaml"`,
		},
		{
			name:        "ours, defaults",
			config:      "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker: {}\ntimeBudget: {}\n",
			wantBreaker: breaker(5, time.Second, 30*time.Second),
			wantBudget:  budget(2*time.Second, 0),
			wantOurs:    true,
		},
		{
			name:       "ours, early exit alone",
			config:     "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nearlyExit: true\n",
			validating: true,
			wantEarly:  true,
			wantOurs:   true,
		},
		{
			name:    "early exit is the validating plugin's only",
			config:  "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nearlyExit: true\n",
			wantErr: []string{"earlyExit", "one after another"},
		},
		{
			name:        "ours, the example",
			config:      legacyKind + ExampleDispatchSettings,
			wantBreaker: breaker(5, time.Second, 30*time.Second),
			wantBudget:  budget(2*time.Second, 0),
			wantOurs:    true,
		},
		{
			name:        "ours, the validating example",
			config:      legacyKind + ExampleValidatingDispatchSettings,
			validating:  true,
			wantBreaker: breaker(5, time.Second, 30*time.Second),
			wantBudget:  budget(2*time.Second, 0),
			wantEarly:   true,
			wantOurs:    true,
		},
		{
			name:        "ours, set",
			config:      "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  failureThreshold: 2\n  initialBackoff: 200ms\n  maxBackoff: 5m\ntimeBudget:\n  deadlineMargin: 500ms\n  maxDuration: 15s\n",
			wantBreaker: breaker(2, 200*time.Millisecond, 5*time.Minute),
			wantBudget:  budget(500*time.Millisecond, 15*time.Second),
			wantOurs:    true,
		},
		{
			name:        "a long initial backoff raises the default cap",
			config:      "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  initialBackoff: 1m\n",
			wantBreaker: breaker(5, time.Minute, time.Minute),
			wantOurs:    true,
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
			upstream, settings, err := WebhookEntry([]byte(tc.config), tc.validating)
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
			if settings.Ours() != tc.wantOurs {
				t.Errorf("settings %+v: ours %v, want %v", settings, settings.Ours(), tc.wantOurs)
			}
			if settings != nil {
				if diff := cmp.Diff(tc.wantBreaker, settings.CircuitBreaker); diff != "" {
					t.Errorf("breaker (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantBudget, settings.TimeBudget); diff != "" {
					t.Errorf("budget (-want +got):\n%s", diff)
				}
				if settings.EarlyExit != tc.wantEarly {
					t.Errorf("early exit %v, want %v", settings.EarlyExit, tc.wantEarly)
				}
			}
			if tc.wantUpstream == "" {
				if upstream != nil {
					t.Errorf("upstream's loader is handed %q, want no entry", upstream)
				}
				return
			}
			if !strings.Contains(string(upstream), tc.wantUpstream) {
				t.Errorf("upstream's loader is handed %q, want it to contain %q", upstream, tc.wantUpstream)
			}
		})
	}
}

func breaker(threshold int32, initial, maxBackoff time.Duration) *admission.WebhookCircuitBreaker {
	return &admission.WebhookCircuitBreaker{FailureThreshold: ptr.To(threshold), InitialBackoff: duration(initial), MaxBackoff: duration(maxBackoff)}
}

func budget(margin, maxDuration time.Duration) *admission.WebhookTimeBudget {
	b := &admission.WebhookTimeBudget{DeadlineMargin: duration(margin)}
	if maxDuration > 0 {
		b.MaxDuration = duration(maxDuration)
	}
	return b
}

// TestUpstreamWebhookEntry: a webhook plugin is handed, for upstream's constructor, the entry
// Load converted from the form of earlier releases (the first of its name, which upstream
// hands the plugin), and its own entry otherwise.
func TestUpstreamWebhookEntry(t *testing.T) {
	file := writeFile(t, t.TempDir(), "admission.yaml", header+`- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookDispatchConfiguration
    kubeConfigFile: /etc/kubernetes/webhooks.kubeconfig
    earlyExit: true
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: /etc/kubernetes/second.kubeconfig
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: /etc/kubernetes/webhooks.kubeconfig
`)
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	own := strings.NewReader("the plugin's own entry")
	read := func(r io.Reader) string {
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read(c.UpstreamWebhookEntry(true, own)); !strings.Contains(got, `"kind":"WebhookAdmissionConfiguration"`) || !strings.Contains(got, "/etc/kubernetes/webhooks.kubeconfig") {
		t.Errorf("the validating plugin is handed %q, want the converted entry", got)
	}
	if d := c.Dispatch(true); d == nil || !d.EarlyExit {
		t.Errorf("dispatch %+v, want the first entry's (early exit)", d)
	}
	if r := c.UpstreamWebhookEntry(false, own); r != io.Reader(own) {
		t.Error("the mutating plugin's entry, upstream's kind, was replaced")
	}
	var none *Configuration
	if r := none.UpstreamWebhookEntry(true, own); r != io.Reader(own) {
		t.Error("without a loaded configuration the plugin's own entry was replaced")
	}
}

// TestLegacyEntryWithoutUpstreamFields: our kind that names neither kubeConfigFile nor
// staticManifestsDir gives upstream's constructor no entry, as a stock file without one.
func TestLegacyEntryWithoutUpstreamFields(t *testing.T) {
	file := writeFile(t, t.TempDir(), "admission.yaml", header+"- name: MutatingAdmissionWebhook\n  configuration:\n"+
		"    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n    circuitBreaker: {}\n")
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.UpstreamWebhookEntry(false, strings.NewReader("the plugin's own entry")); r != nil {
		t.Errorf("upstream's constructor is handed an entry; want none")
	}
	if !c.Dispatch(false).Ours() {
		t.Error("the entry's breakers were not read")
	}
}
