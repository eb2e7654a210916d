package persistentvolumelabel

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

const configHeader = "apiVersion: admission.portcullis.io/v1alpha1\nkind: PersistentVolumeLabelConfiguration\n"

func TestLoadConfigurationDefaults(t *testing.T) {
	want := &portcullisapi.PersistentVolumeLabelConfiguration{
		Resolvers: []portcullisapi.PersistentVolumeLabelResolverName{"CSITopology", "Nodes", "VolumeID"},
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
	if got := withRules.Resolvers; len(got) != 4 || got[3] != portcullisapi.PersistentVolumeLabelResolverRules {
		t.Errorf("with rules, resolvers default to %v, want Rules last of four", got)
	}
	uncommented := strings.NewReplacer("# rules:", "rules:", "# - ", "- ", "#   ", "  ").Replace(ExampleConfig)
	if _, err := LoadConfiguration(strings.NewReader(uncommented)); err != nil {
		t.Errorf("the example with its rule uncommented: %v", err)
	}
}

// TestLoadConfigurationErrors: the loader's errors name the plugin and what went wrong; the
// rules themselves are pkg/apis/admission/validation's, tested there.
func TestLoadConfigurationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// in is the configuration's body, after the kind's header; whole replaces both.
		in, whole string
		want      []string
	}{
		{name: "misspelt field", in: "labelkeys: GA\n", want: []string{`PersistentVolumeLabel: decoding configuration`, `unknown field "labelkeys"`}},
		{name: "another kind", whole: "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n",
			want: []string{"PersistentVolumeLabel: decoding configuration", "want admission.portcullis.io/v1alpha1, Kind=PersistentVolumeLabelConfiguration"}},
		{name: "unknown resolver", in: "resolvers: [CSITopology, Cloud]\n", want: []string{`PersistentVolumeLabel: invalid configuration`, `resolvers[1]: Unsupported value: "Cloud"`}},
		{name: "rule expression", in: "rules:\n- source: CSI\n  match: '(['\n  zone: z\n", want: []string{`rules[0].match: Invalid value: "(["`, "missing closing ]"}},
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

// TestEveryRuleSourceApplies: each source validation accepts in a rule is one the plugin
// reads an identifier from.
func TestEveryRuleSourceApplies(t *testing.T) {
	for _, source := range portcullisapi.PersistentVolumeLabelSources() {
		cfg, err := LoadConfiguration(strings.NewReader(configHeader + "rules:\n- source: " + string(source) + "\n  zone: z\n"))
		if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if _, err := New(cfg); err != nil {
			t.Errorf("%s: %v", source, err)
		}
	}
	if len(identifiers) != len(portcullisapi.PersistentVolumeLabelSources()) {
		t.Errorf("the plugin knows %d sources, validation accepts %d", len(identifiers), len(portcullisapi.PersistentVolumeLabelSources()))
	}
	_, err := New(&portcullisapi.PersistentVolumeLabelConfiguration{
		Resolvers: []portcullisapi.PersistentVolumeLabelResolverName{portcullisapi.PersistentVolumeLabelResolverRules},
		Rules:     []portcullisapi.PersistentVolumeLabelRule{{Source: "NFS", Zone: "z"}},
	})
	if err == nil || !strings.Contains(err.Error(), `unknown source "NFS"`) {
		t.Errorf("New with a rule of an unknown source: %v", err)
	}
}
