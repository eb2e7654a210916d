package portcullisconfig

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// FuzzWebhookEntry converts a webhook plugin's entry of the admission config file as Load
// does for the plugin. What it accepts is within the documented ranges (the API types' comments,
// restated here rather than taken from the validation it checks). Seeds are
// TestWebhookEntry's entries; crashers are kept under testdata/fuzz.
func FuzzWebhookEntry(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: /etc/k/webhooks.yaml\n",
		"apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\ncircuitBreaker: {}\ntimeBudget: {}\n",
		legacyKind + ExampleDispatchSettings,
		legacyKind + ExampleValidatingDispatchSettings,
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
		_, mutating, mutatingErr := WebhookEntry(data, false)
		upstream, settings, err := WebhookEntry(data, true)
		if err != nil {
			if mutatingErr == nil {
				t.Fatalf("the mutating plugin accepts what the validating one refuses: %v", err)
			}
			return
		}
		if mutatingErr == nil && (mutating.Ours() != settings.Ours() || (mutating != nil && mutating.EarlyExit)) {
			t.Fatalf("the mutating plugin accepted early exit: %+v", mutating)
		}
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(data, &typeMeta); err != nil || typeMeta.GroupVersionKind().Group != admissionv1alpha1.GroupName {
			// Not ours: handed over unchanged, and nothing of ours is on.
			if !bytes.Equal(upstream, data) || settings != nil {
				t.Fatalf("upstream's entry was changed or turned something on: %q, %+v", upstream, settings)
			}
			return
		}
		// The documented ranges, restated here rather than taken from the validation.
		if settings == nil {
			settings = &admission.WebhookDispatchSettings{}
		}
		if b := settings.CircuitBreaker; b != nil {
			initial, maxBackoff := b.InitialBackoff.Duration, b.MaxBackoff.Duration
			if *b.FailureThreshold < 1 || *b.FailureThreshold > 1000 || initial < 100*time.Millisecond || initial > 10*time.Minute ||
				maxBackoff < initial || maxBackoff > time.Hour {
				t.Fatalf("accepted breaker settings out of bounds: %+v", *b)
			}
		}
		if b := settings.TimeBudget; b != nil {
			if margin := b.DeadlineMargin.Duration; margin < 100*time.Millisecond || margin > 30*time.Second ||
				(b.MaxDuration != nil && (b.MaxDuration.Duration < time.Second || b.MaxDuration.Duration > 10*time.Minute)) {
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
		if ours.KubeConfigFile == "" && ours.StaticManifestsDir == "" {
			if upstream != nil {
				t.Fatalf("upstream is handed %q for an entry that names neither of its fields; want none", upstream)
			}
			return
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
