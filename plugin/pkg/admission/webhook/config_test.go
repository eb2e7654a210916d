package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// loadEntry builds a webhook plugin's configuration as the server does: portcullisconfig.Load
// reads an admission config file whose entry for the plugin is entry (YAML, the entry's
// configuration), and the plugin is given what the registry hands it.
func loadEntry(t *testing.T, validating bool, entry string) *Configuration {
	t.Helper()
	name := "MutatingAdmissionWebhook"
	if validating {
		name = "ValidatingAdmissionWebhook"
	}
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: " + name + "\n  configuration:\n")
	for _, line := range strings.Split(strings.TrimRight(entry, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	file := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := portcullisconfig.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return NewConfiguration(loaded.UpstreamWebhookEntry(validating, strings.NewReader(entry)), &loaded.PortcullisConfiguration, validating)
}
