package portcullisconfig

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/releases"
)

// firstReleaseFields are the Portcullis entry's fields in the first release, as its types
// had them (git show v1.37.1+portcullis.1's portcullis_types.go and webhookdispatch_types.go).
var firstReleaseFields = []string{
	"enforcementModes", "enforcementModes.name", "enforcementModes.modes",
	"servedAPIs",
	"webhookDispatch",
	"webhookDispatch.mutating", "webhookDispatch.validating",
	"webhookDispatch.mutating.circuitBreaker", "webhookDispatch.validating.circuitBreaker",
	"webhookDispatch.mutating.circuitBreaker.failureThreshold", "webhookDispatch.validating.circuitBreaker.failureThreshold",
	"webhookDispatch.mutating.circuitBreaker.initialBackoff", "webhookDispatch.validating.circuitBreaker.initialBackoff",
	"webhookDispatch.mutating.circuitBreaker.maxBackoff", "webhookDispatch.validating.circuitBreaker.maxBackoff",
	"webhookDispatch.mutating.timeBudget", "webhookDispatch.validating.timeBudget",
	"webhookDispatch.mutating.timeBudget.deadlineMargin", "webhookDispatch.validating.timeBudget.deadlineMargin",
	"webhookDispatch.mutating.timeBudget.maxDuration", "webhookDispatch.validating.timeBudget.maxDuration",
	"webhookDispatch.mutating.earlyExit", "webhookDispatch.validating.earlyExit",
}

// jsonPaths lists the JSON paths of t's fields, descending into this API's own structs
// (apimachinery's types, such as metav1.Duration, are values).
func jsonPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "github.com/portcullis-k8s/") {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue // inline TypeMeta
		}
		path := prefix + name
		out = append(out, path)
		out = append(out, jsonPaths(f.Type, path+".")...)
	}
	return out
}

func TestEveryNewerFieldIsListed(t *testing.T) {
	for _, path := range jsonPaths(reflect.TypeFor[admissionv1alpha1.PortcullisConfiguration](), "") {
		if slices.Contains(firstReleaseFields, path) {
			continue
		}
		if !slices.ContainsFunc(newerFields, func(f NewerField) bool { return path == f.Path || strings.HasPrefix(path, f.Path+".") }) {
			t.Errorf("the Portcullis entry's field %s is neither the first release's nor in newerFields: add it there with the release that adds it, and to CHANGELOG.md", path)
		}
	}
	for _, f := range newerFields {
		if !slices.Contains(releases.All, f.Since) || f.Since == releases.First {
			t.Errorf("newerFields: %s: Since %q is not a release after the first", f.Path, f.Since)
		}
	}
}

// TestChangelogNamesNewerFields holds CHANGELOG.md to name each added field, by its whole
// path, in the section of the release that added it.
func TestChangelogNamesNewerFields(t *testing.T) {
	data, err := os.ReadFile("../../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, s := range strings.Split(string(data), "\n## ")[1:] {
		version, _, _ := strings.Cut(s, " ")
		sections[strings.TrimSpace(version)] = s
	}
	for _, f := range newerFields {
		section, ok := sections[f.Since]
		if !ok {
			t.Errorf("CHANGELOG.md has no section for %s", f.Since)
			continue
		}
		if !strings.Contains(section, "`"+f.Path+"`") {
			t.Errorf("CHANGELOG.md's %s section does not name `%s`", f.Since, f.Path)
		}
	}
}

func TestNewerFieldsSet(t *testing.T) {
	one := int32(1)
	config := &admission.PortcullisConfiguration{
		ServedAPIs:     []string{"policy/v1beta1"},
		AdmissionTrace: &admission.AdmissionTrace{OnRequest: true},
		WebhookDispatch: &admission.WebhookDispatch{
			Mutating:   &admission.WebhookDispatchSettings{IdempotencyProbe: &admission.WebhookIdempotencyProbe{OneIn: one}},
			Validating: &admission.WebhookDispatchSettings{EarlyExit: true},
		},
	}
	var got []string
	for _, f := range NewerFieldsSet(config) {
		got = append(got, f.Path)
	}
	if want := []string{"admissionTrace", "webhookDispatch.mutating.idempotencyProbe"}; !slices.Equal(got, want) {
		t.Errorf("NewerFieldsSet = %q, want %q", got, want)
	}
	if got := NewerFieldsSet(&admission.PortcullisConfiguration{ServedAPIs: []string{"policy/v1beta1"}}); len(got) != 0 {
		t.Errorf("a first-release configuration: NewerFieldsSet = %v", got)
	}
}
