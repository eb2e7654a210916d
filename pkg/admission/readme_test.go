package admission

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// TestWebhooksDocNamesEverySettingThatSwitchesDispatch keeps docs/webhooks.md's first bullet
// true: the settings it names are exactly those that put a webhook plugin on our dispatch —
// each field of webhookDispatch, set alone — and the Portcullis entry's admissionTrace,
// outside webhookDispatch, is not one of them (the registry test builds upstream's plugin
// for it).
func TestWebhooksDocNamesEverySettingThatSwitchesDispatch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	bullet := regexp.MustCompile(`(?s)- \*\*No Portcullis entry, or no .*?one\s+with none of (.*?):\*\*`).FindSubmatch(data)
	if bullet == nil {
		t.Fatal("docs/webhooks.md lacks its first bullet, \"No Portcullis entry, … with none of …:\"")
	}
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z][a-zA-Z]+)`").FindAllSubmatch(bullet[1], -1) {
		documented = append(documented, string(m[1]))
	}
	alone := map[string]string{
		"circuitBreaker":   "circuitBreaker: {}",
		"timeBudget":       "timeBudget: {}",
		"earlyExit":        "earlyExit: true",
		"enforcementModes": "enforcementModes: [{configuration: c, webhook: w.example.com, modes: [Audit]}]",
		"idempotencyProbe": "idempotencyProbe: {oneIn: 1}",
	}
	fields := reflect.TypeFor[admissionv1alpha1.WebhookDispatchSettings]()
	var switching []string
	for i := range fields.NumField() {
		name, _, _ := strings.Cut(fields.Field(i).Tag.Get("json"), ",")
		settings, ok := alone[name]
		if !ok {
			t.Errorf("webhookDispatch's field %s is new: say here how to set it alone, and whether docs/webhooks.md lists it", name)
			continue
		}
		for _, plugin := range []string{"mutating", "validating"} {
			file := filepath.Join(t.TempDir(), "admission.yaml")
			entry := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: Portcullis\n  configuration:\n" +
				"    apiVersion: admission.portcullis.io/v1alpha1\n    kind: PortcullisConfiguration\n    webhookDispatch:\n      " + plugin + ":\n        " + settings + "\n"
			if err := os.WriteFile(file, []byte(entry), 0o600); err != nil {
				t.Fatal(err)
			}
			config, err := portcullisconfig.Load(file)
			if err == nil && config.Dispatch(plugin == "validating").Ours() {
				switching = append(switching, name)
				break
			}
		}
	}
	slices.Sort(documented)
	slices.Sort(switching)
	if diff := cmp.Diff(switching, documented); diff != "" {
		t.Errorf("docs/webhooks.md's first bullet names other settings than those that put a plugin on our dispatch (-code +doc):\n%s", diff)
	}
}
