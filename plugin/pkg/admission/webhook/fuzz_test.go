package webhook

import (
	"bytes"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// FuzzLoadConfiguration loads a webhook plugin's entry of the admission config file as the
// plugin's New does. What it accepts is within the documented ranges (the API types' comments,
// restated here rather than taken from the validation it checks). Seeds are
// TestLoadConfiguration's entries; crashers are kept under testdata/fuzz.
func FuzzLoadConfiguration(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker: {}\ntimeBudget: {}\n",
		legacyKind + portcullisconfig.ExampleDispatchSettings,
		legacyKind + portcullisconfig.ExampleValidatingDispatchSettings,
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nearlyExit: true\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  failureThreshold: 2\n  initialBackoff: 200ms\n  maxBackoff: 5m\ntimeBudget:\n  deadlineMargin: 500ms\n  maxDuration: 15s\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  initialBackoff: 1m\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreakers: {}\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: relative.yaml\ncircuitBreaker:\n  failureThreshold: 0\n  initialBackoff: 1ms\n  maxBackoff: 2h\ntimeBudget:\n  deadlineMargin: 1m\n  maxDuration: 100ms\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker:\n  initialBackoff: 10s\n  maxBackoff: 1s\n",
		`{"apiVersion":"admission.portcullis.io/v1alpha1","kind":"WebhookDispatchConfiguration","staticManifestsDir":"/etc/k/manifests"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mutatingCfg, mutatingErr := loadEntry(MutatingPlugin, bytes.NewReader(data))
		cfg, err := loadEntry(ValidatingPlugin, bytes.NewReader(data))
		if err != nil {
			if mutatingErr == nil {
				t.Fatalf("the mutating plugin accepts what the validating one refuses: %v", err)
			}
			return
		}
		if mutatingErr == nil && (mutatingCfg.EarlyExit || mutatingCfg.Ours() != cfg.Ours()) {
			t.Fatalf("the mutating plugin accepted early exit: %+v", mutatingCfg)
		}
		if cfg.Upstream == nil {
			t.Fatal("a configuration without an entry for upstream's loader")
		}
		upstream, err := io.ReadAll(cfg.Upstream)
		if err != nil {
			t.Fatal(err)
		}
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(data, &typeMeta); err != nil || typeMeta.GroupVersionKind().Group != admissionv1alpha1.GroupName {
			// Not ours: handed over unchanged, and nothing of ours is on.
			if !bytes.Equal(upstream, data) || cfg.Ours() {
				t.Fatalf("upstream's entry was changed or turned something on: %q, %+v", upstream, cfg)
			}
			return
		}
		if b := cfg.Breaker; b != nil {
			if b.FailureThreshold < 1 || b.FailureThreshold > 1000 ||
				b.InitialBackoff < 100*time.Millisecond || b.InitialBackoff > 10*time.Minute ||
				b.MaxBackoff < b.InitialBackoff || b.MaxBackoff > time.Hour {
				t.Fatalf("accepted breaker settings out of bounds: %+v", *b)
			}
		}
		if b := cfg.Budget; b != nil {
			if b.DeadlineMargin < 100*time.Millisecond || b.DeadlineMargin > 30*time.Second ||
				(b.MaxDuration != 0 && (b.MaxDuration < time.Second || b.MaxDuration > 10*time.Minute)) {
				t.Fatalf("accepted budget settings out of bounds: %+v", *b)
			}
		}
		// What ours hands to upstream's loader, upstream accepts (the static manifests
		// directory aside: upstream checks it on the disk and behind a feature gate), with
		// the same kubeconfig.
		var ours admissionv1alpha1.WebhookDispatchConfiguration
		if err := yaml.Unmarshal(data, &ours); err != nil {
			t.Fatalf("accepted, but does not decode: %v", err)
		}
		if ours.StaticManifestsDir != "" {
			return
		}
		if ours.KubeConfigFile == "" && upstreamRequiresKubeConfigFile {
			return
		}
		loaded, err := upstreamKubeConfigFile(upstream)
		if err != nil {
			t.Fatalf("accepted, but upstream's loader refuses what it is handed (%s): %v", upstream, err)
		}
		if loaded != ours.KubeConfigFile {
			t.Fatalf("kubeConfigFile %q reached upstream as %q", ours.KubeConfigFile, loaded)
		}
	})
}
