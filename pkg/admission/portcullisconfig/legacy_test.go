package portcullisconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

// TestDocsSayWhenLegacyFormsStopBeingRead holds the pages that describe the forms of earlier
// releases, and the start-up warning, to LegacyLastMinor: the releases of that minor and
// earlier read them, the first on the next refuses them.
func TestDocsSayWhenLegacyFormsStopBeingRead(t *testing.T) {
	major, minor, ok := strings.Cut(LegacyLastMinor, ".")
	n, err := strconv.Atoi(minor)
	if !ok || err != nil {
		t.Fatalf("LegacyLastMinor %q is not 1.N", LegacyLastMinor)
	}
	next := fmt.Sprintf("%s.%d", major, n+1)
	for _, page := range []string{"registry.md", "enforcement-modes.md", "webhooks.md", "troubleshooting.md"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", page))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		if !strings.Contains(text, "Kubernetes "+LegacyLastMinor+" and earlier") {
			t.Errorf("docs/%s does not say the releases built on Kubernetes %s and earlier read the forms of earlier releases", page, LegacyLastMinor)
		}
		if page != "troubleshooting.md" && !strings.Contains(text, next) {
			t.Errorf("docs/%s does not name %s, the first minor whose releases refuse them", page, next)
		}
	}
	for _, d := range loadDeprecations(t) {
		if !strings.Contains(d.Message, "Kubernetes "+LegacyLastMinor+" and earlier") {
			t.Errorf("the deprecation %q does not say until when the form is read", d.Message)
		}
	}
}

// loadDeprecations loads a file with both forms of earlier releases.
func loadDeprecations(t *testing.T) []Deprecation {
	t.Helper()
	file := writeFile(t, t.TempDir(), "admission.yaml", header+`- name: EnforcementModes
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: EnforcementConfiguration
    plugins:
    - name: SecurityContextDeny
      modes: [Audit]
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: admission.portcullis.io/v1alpha1
    kind: WebhookDispatchConfiguration
    circuitBreaker: {}
`)
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Deprecations) != 2 {
		t.Fatalf("deprecations %+v, want one a form", c.Deprecations)
	}
	return c.Deprecations
}

// TestLegacyFormsAreRefusedAfterTheirLastMinor: a build on a later minor than LegacyLastMinor
// refuses each form, naming the entry and the replacement (legacy.go stays for that: deleting
// it would let a leftover EnforcementModes entry be ignored, its plugins back in Deny); a build
// on LegacyLastMinor or before reads them.
func TestLegacyFormsAreRefusedAfterTheirLastMinor(t *testing.T) {
	major, minor, _ := strings.Cut(LegacyLastMinor, ".")
	n, _ := strconv.Atoi(minor)
	next := fmt.Sprintf("%s.%d", major, n+1)
	for _, tc := range []struct{ name, entry, want string }{
		{"EnforcementModes entry", "- name: EnforcementModes\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: EnforcementConfiguration\n    plugins: []\n",
			"plugins[0] (EnforcementModes): the EnforcementModes entry is no longer read"},
		{"dispatch kind", "- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: admission.portcullis.io/v1alpha1\n    kind: WebhookDispatchConfiguration\n",
			"plugins[0] (ValidatingAdmissionWebhook): WebhookDispatchConfiguration in ValidatingAdmissionWebhook's entry is no longer read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "admission.yaml", header+tc.entry)
			if _, err := load(file, LegacyLastMinor); err != nil {
				t.Fatalf("a build on %s: %v", LegacyLastMinor, err)
			}
			// This build, as Load reads: the forms are read up to LegacyLastMinor, and refused
			// (naming the replacement, so that nothing set there is silently dropped) after it.
			if _, err := Load(file); (err == nil) != legacyRead(kubecompat.Minor) {
				t.Errorf("a build on %s (this one): %v", kubecompat.Minor, err)
			}
			_, err := load(file, next)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), file) {
				t.Errorf("a build on %s: %v, want an error naming the file and %q", next, err, tc.want)
			}
		})
	}
}
