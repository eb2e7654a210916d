package persistentvolumelabel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

const configHeader = "apiVersion: admission.portcullis.io/v1alpha1\nkind: PersistentVolumeLabelConfiguration\n"

func TestLoadConfigurationDefaults(t *testing.T) {
	want := &admissionv1alpha1.PersistentVolumeLabelConfiguration{
		Resolvers: []admissionv1alpha1.PersistentVolumeLabelResolverName{"CSITopology", "Nodes", "VolumeID"},
		LabelKeys: "GA", NodeAffinity: "Add", Unresolved: "Admit",
	}
	for _, in := range []string{"", configHeader, ExampleConfig} {
		cfg, err := LoadConfiguration(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		cfg.TypeMeta = metav1.TypeMeta{}
		if diff := cmp.Diff(want, cfg); diff != "" {
			t.Errorf("%q: defaults (-want +got):\n%s", in, diff)
		}
	}
	withRules, err := LoadConfiguration(strings.NewReader(configHeader + "rules:\n- source: CSI\n  zone: z\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := withRules.Resolvers; len(got) != 4 || got[3] != admissionv1alpha1.PersistentVolumeLabelResolverRules {
		t.Errorf("with rules, resolvers default to %v, want Rules last of four", got)
	}
	uncommented := strings.NewReplacer("# rules:", "rules:", "# - ", "- ", "#   ", "  ").Replace(ExampleConfig)
	if _, err := LoadConfiguration(strings.NewReader(uncommented)); err != nil {
		t.Errorf("the example with its rule uncommented: %v", err)
	}
}

func TestLoadConfigurationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// in is the configuration's body, after the kind's header; whole replaces both.
		in, whole string
		want      []string
	}{
		{name: "misspelt field", in: "labelkeys: GA\n", want: []string{`PersistentVolumeLabel: decoding configuration`, `unknown field "labelkeys"`}},
		{name: "another kind", whole: "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n",
			want: []string{"configuration is admission.portcullis.io/v1alpha1, Kind=InitialResourcesConfiguration, want admission.portcullis.io/v1alpha1, Kind=PersistentVolumeLabelConfiguration"}},
		{name: "unknown resolver", in: "resolvers: [CSITopology, Cloud]\n", want: []string{`resolvers[1]: Unsupported value: "Cloud"`}},
		{name: "duplicate resolver", in: "resolvers: [Nodes, Nodes]\n", want: []string{`resolvers[1]: Duplicate value: "Nodes"`}},
		{name: "no resolver", in: "resolvers: []\n", want: []string{`resolvers: Required value`}},
		{name: "Rules without rules", in: "resolvers: [Rules]\n", want: []string{`rules: Required value: the Rules resolver needs at least one rule`}},
		{name: "rules without the Rules resolver", in: "resolvers: [Nodes]\nrules:\n- source: CSI\n  zone: z\n", want: []string{`resolvers: Invalid value`, `they would never be used`}},
		{name: "label keys", in: "labelKeys: ga\n", want: []string{`labelKeys: Unsupported value: "ga": supported values: "GA", "Beta", "Both"`}},
		{name: "node affinity", in: "nodeAffinity: Replace\n", want: []string{`nodeAffinity: Unsupported value: "Replace"`}},
		{name: "unresolved", in: "unresolved: Deny\n", want: []string{`unresolved: Unsupported value: "Deny": supported values: "Admit", "Refuse"`}},
		{name: "rule source", in: "rules:\n- source: NFS\n  zone: z\n", want: []string{`rules[0].source: Unsupported value: "NFS"`}},
		{name: "rule driver on an in-tree source", in: "rules:\n- source: Cinder\n  driver: x\n  zone: z\n", want: []string{`rules[0].driver: Invalid value: "x": only a CSI rule names a driver`}},
		{name: "rule expression", in: "rules:\n- source: CSI\n  match: '(['\n  zone: z\n", want: []string{`rules[0].match: Invalid value: "(["`, "missing closing ]"}},
		{name: "rule without zone", in: "rules:\n- source: CSI\n  region: r\n", want: []string{`rules[0].zone: Required value`}},
		{name: "rule zone list", in: "rules:\n- source: CSI\n  zone: 'a____b'\n", want: []string{`rules[0].zone: Invalid value: "a____b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := configHeader + tc.in
			if tc.whole != "" {
				in = tc.whole
			}
			_, err := LoadConfiguration(strings.NewReader(in))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), PluginName+": ") {
				t.Errorf("error %q does not name the plugin", err)
			}
		})
	}
}
