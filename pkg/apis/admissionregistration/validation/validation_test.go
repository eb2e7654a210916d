package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
)

func configuration(initializers ...admissionregistration.Initializer) *admissionregistration.InitializerConfiguration {
	return &admissionregistration.InitializerConfiguration{
		ObjectMeta:   metav1.ObjectMeta{Name: "config"},
		Initializers: initializers,
	}
}

func rule(groups, versions, resources []string) admissionregistration.Rule {
	return admissionregistration.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}
}

func initializer(name string, rules ...admissionregistration.Rule) admissionregistration.Initializer {
	return admissionregistration.Initializer{Name: name, Rules: rules}
}

func withMatchPolicy(i admissionregistration.Initializer, policy admissionregistration.MatchPolicyType) admissionregistration.Initializer {
	i.MatchPolicy = &policy
	return i
}

// The cases of Kubernetes 1.13's TestValidateInitializerConfiguration: the inputs and the
// errors it expected (each wanted string is a part of the aggregated message).
func TestValidateInitializerConfiguration(t *testing.T) {
	a := []string{"a"}
	tests := []struct {
		name   string
		config *admissionregistration.InitializerConfiguration
		want   []string
	}{
		{
			name:   "0 rule is valid",
			config: configuration(initializer("initializer.k8s.io")),
		},
		{
			name:   "every initializer must have a fully qualified name",
			config: configuration(initializer("initializer.k8s.io"), initializer("k8s.io"), initializer("")),
			want: []string{
				`initializers[1].name: Invalid value: "k8s.io": should be a domain with at least three segments separated by dots`,
				`initializers[2].name: Required value`,
			},
		},
		{
			// Not 1.13's: the plugin makes a pod's initializers scheduling gates, whose names
			// are qualified names (at most 63 characters without a prefix).
			name:   "an initializer's name is a scheduling gate's: 63 characters at most",
			config: configuration(initializer(strings.Repeat("a", 51)+".example.com"), initializer(strings.Repeat("a", 52)+".example.com")),
			want: []string{
				`initializers[1].name: Invalid value: "` + strings.Repeat("a", 52) + `.example.com": name part must be no more than 63 bytes`,
				"the name of the scheduling gate",
			},
		},
		{
			name:   "apiGroups must not be empty or nil",
			config: configuration(initializer("initializer.k8s.io", rule([]string{}, a, a), rule(nil, a, a))),
			want:   []string{`initializers[0].rules[0].apiGroups: Required value`, `initializers[0].rules[1].apiGroups: Required value`},
		},
		{
			name:   "apiVersions must not be empty or nil",
			config: configuration(initializer("initializer.k8s.io", rule(a, []string{}, a), rule(a, nil, a))),
			want:   []string{`initializers[0].rules[0].apiVersions: Required value`, `initializers[0].rules[1].apiVersions: Required value`},
		},
		{
			name:   "resources must not be empty or nil",
			config: configuration(initializer("initializer.k8s.io", rule(a, a, []string{}), rule(a, a, nil))),
			want:   []string{`initializers[0].rules[0].resources: Required value`, `initializers[0].rules[1].resources: Required value`},
		},
		{
			name:   `"" is a valid API group (the core group)`,
			config: configuration(initializer("initializer.k8s.io", rule([]string{"a", ""}, a, a))),
		},
		{
			name:   `"" is not a valid API version`,
			config: configuration(initializer("initializer.k8s.io", rule(a, []string{"a", ""}, a))),
			want:   []string{`initializers[0].rules[0].apiVersions[1]: Required value`},
		},
		{
			name:   `"" is not a valid resource`,
			config: configuration(initializer("initializer.k8s.io", rule(a, a, []string{"a", ""}))),
			want:   []string{`initializers[0].rules[0].resources[1]: Required value`},
		},
		{
			name:   "a wildcard cannot be mixed with other values",
			config: configuration(initializer("initializer.k8s.io", rule([]string{"a", "*"}, []string{"a", "*"}, []string{"a", "*"}))),
			want: []string{
				`initializers[0].rules[0].apiGroups: Invalid value:`, `if '*' is present, must not specify other API groups`,
				`initializers[0].rules[0].apiVersions: Invalid value:`, `if '*' is present, must not specify other API versions`,
				`initializers[0].rules[0].resources: Invalid value:`, `if '*' is present, must not specify other resources`,
			},
		},
		{
			name:   "a wildcard alone is valid",
			config: configuration(initializer("initializer.k8s.io", rule([]string{"*"}, []string{"*"}, []string{"*"}))),
		},
		{
			name:   "a subresource is not allowed",
			config: configuration(initializer("initializer.k8s.io", rule(a, a, []string{"a/b"}))),
			want:   []string{`initializers[0].rules[0].resources[0]: Invalid value: "a/b": must not specify subresources`},
		},
		{
			name:   "matchPolicy Exact, Equivalent or unset",
			config: configuration(withMatchPolicy(initializer("a.k8s.io", rule(a, a, a)), "Exact"), withMatchPolicy(initializer("b.k8s.io", rule(a, a, a)), "Equivalent"), initializer("c.k8s.io", rule(a, a, a))),
		},
		{
			name:   "matchPolicy is one of Exact and Equivalent",
			config: configuration(withMatchPolicy(initializer("a.k8s.io", rule(a, a, a)), "Loose")),
			want:   []string{`initializers[0].matchPolicy: Unsupported value: "Loose": supported values: "Equivalent", "Exact"`},
		},
		{
			name:   "the configuration's name must be a DNS subdomain",
			config: &admissionregistration.InitializerConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}},
			want:   []string{`metadata.name: Invalid value: "Not_A_Name"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateInitializerConfiguration(tc.config)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs.ToAggregate())
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("no error, want %q", tc.want)
			}
			got := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("errors %q do not contain %q", got, w)
				}
			}
		})
	}
}

func TestValidateInitializerConfigurationUpdate(t *testing.T) {
	old := configuration(initializer("initializer.k8s.io"))
	old.ResourceVersion = "1"
	updated := old.DeepCopy()
	updated.Initializers = append(updated.Initializers, initializer("k8s.io"))
	got := ValidateInitializerConfigurationUpdate(updated, old).ToAggregate()
	if got == nil || !strings.Contains(got.Error(), `initializers[1].name: Invalid value: "k8s.io"`) {
		t.Errorf("an update is not validated as a configuration: %v", got)
	}
}
