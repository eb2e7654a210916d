package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

func TestCheckConfigurations(t *testing.T) {
	const guard = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: WebhookConfigurationGuard
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookConfigurationGuardConfiguration
    timeoutThresholdSecond: 5
`
	tests := []struct {
		name    string
		config  string
		enable  []string
		wantErr []string
	}{
		{"a misspelt field of an enabled plugin's entry", guard, []string{"WebhookConfigurationGuard"},
			[]string{"--admission-control-config-file", "admission.yaml", "the entry of WebhookConfigurationGuard", `unknown field "timeoutThresholdSecond"`}},
		{"the same entry, the plugin not enabled", guard, nil, nil},
		{"a valid entry", strings.Replace(guard, "timeoutThresholdSecond", "timeoutThresholdSeconds", 1), []string{"WebhookConfigurationGuard"}, nil},
		{"no entry: the defaults", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n", []string{"WebhookConfigurationGuard", "InitialResources"}, nil},
		{"a file the entry names is missing", strings.NewReplacer("WebhookConfigurationGuardConfiguration", "InitialResourcesConfiguration", "WebhookConfigurationGuard", "InitialResources",
			"timeoutThresholdSecond: 5", "prometheus: {url: https://p, caFile: /nonexistent/ca.crt}").Replace(guard), []string{"InitialResources"},
			[]string{"the entry of InitialResources", "prometheus.caFile"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "admission.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			opts := kubeoptions.NewAdmissionOptions()
			if _, err := Install(opts); err != nil {
				t.Fatal(err)
			}
			opts.GenericAdmission.ConfigFile = path
			opts.GenericAdmission.EnablePlugins = tc.enable
			err := CheckConfigurations(opts)
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("CheckConfigurations: %v", err)
			}
			if len(tc.wantErr) > 0 && err == nil {
				t.Fatal("CheckConfigurations passed, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
