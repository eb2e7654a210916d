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
	"k8s.io/apimachinery/pkg/util/validation/field"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
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
	one := int32(1)
	alone := map[string]admissionv1alpha1.WebhookDispatchSettings{
		"circuitBreaker":   {CircuitBreaker: &admissionv1alpha1.WebhookCircuitBreaker{}},
		"timeBudget":       {TimeBudget: &admissionv1alpha1.WebhookTimeBudget{}},
		"earlyExit":        {EarlyExit: true},
		"enforcementModes": {EnforcementModes: []admissionv1alpha1.WebhookEnforcement{{Configuration: "c", Webhook: "w.example.com", Modes: []admissionv1alpha1.EnforcementMode{"Audit"}}}},
		"idempotencyProbe": {IdempotencyProbe: &admissionv1alpha1.WebhookIdempotencyProbe{OneIn: one}},
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
		for _, validating := range []bool{webhook.MutatingPlugin, webhook.ValidatingPlugin} {
			dispatch, errs := webhook.NewDispatch(&settings, validating, field.NewPath("webhookDispatch"))
			if len(errs) == 0 && dispatch.Ours() {
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
