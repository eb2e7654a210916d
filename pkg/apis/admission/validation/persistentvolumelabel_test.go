package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// validPersistentVolumeLabel is the defaulted configuration with a rule.
func validPersistentVolumeLabel() *admission.PersistentVolumeLabelConfiguration {
	return &admission.PersistentVolumeLabelConfiguration{
		Resolvers:    []admission.PersistentVolumeLabelResolverName{"CSITopology", "Nodes", "VolumeID", "Rules"},
		LabelKeys:    admission.PersistentVolumeLabelKeysGA,
		NodeAffinity: admission.PersistentVolumeLabelNodeAffinityAdd,
		Unresolved:   admission.PersistentVolumeLabelUnresolvedAdmit,
		Rules:        []admission.PersistentVolumeLabelRule{{Source: admission.PersistentVolumeLabelSourceCinder, Match: "^(?P<zone>az-[0-9]+)-", Zone: "${zone}", Region: "RegionOne"}},
	}
}

func TestValidatePersistentVolumeLabelConfiguration(t *testing.T) {
	csiRule := admission.PersistentVolumeLabelRule{Source: admission.PersistentVolumeLabelSourceCSI, Zone: "z"}
	tests := []struct {
		name   string
		mutate func(*admission.PersistentVolumeLabelConfiguration)
		want   []string // each error, whole
	}{
		{name: "valid", mutate: func(*admission.PersistentVolumeLabelConfiguration) {}},
		{name: "no rules", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Resolvers, c.Rules = c.Resolvers[:3], nil }},
		{name: "every value", mutate: func(c *admission.PersistentVolumeLabelConfiguration) {
			c.Resolvers = []admission.PersistentVolumeLabelResolverName{"Rules", "Nodes"}
			c.LabelKeys, c.NodeAffinity, c.Unresolved = admission.PersistentVolumeLabelKeysBoth, admission.PersistentVolumeLabelNodeAffinityNone, admission.PersistentVolumeLabelUnresolvedRefuse
			c.Rules = []admission.PersistentVolumeLabelRule{
				{Source: "CSI", Driver: "d", Match: "^(?P<z>[a-z]+)/", Zone: "${z}__b", Region: "r"},
				{Source: "GCEPersistentDisk", Zone: "a__b"}, {Source: "AWSElasticBlockStore", Zone: "a"},
				{Source: "AzureDisk", Zone: "a"}, {Source: "VsphereVolume", Zone: "a"},
			}
		}},
		{name: "unknown resolver", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Resolvers[1] = "Cloud" },
			want: []string{`resolvers[1]: Unsupported value: "Cloud": supported values: "CSITopology", "Nodes", "VolumeID", "Rules"`}},
		{name: "duplicate resolver", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Resolvers[1] = "CSITopology" },
			want: []string{`resolvers[1]: Duplicate value: "CSITopology"`}},
		{name: "no resolver", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Resolvers, c.Rules = nil, nil },
			want: []string{`resolvers: Required value: at least one resolver, or leave it out for the default`}},
		{name: "Rules without rules", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Rules = nil },
			want: []string{`rules: Required value: the Rules resolver needs at least one rule`}},
		{name: "rules without the Rules resolver", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Resolvers = c.Resolvers[:1] },
			want: []string{`resolvers: Invalid value: ["CSITopology"]: rules are given but the Rules resolver is not listed: they would never be used`}},
		{name: "label keys", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.LabelKeys = "ga" },
			want: []string{`labelKeys: Unsupported value: "ga": supported values: "GA", "Beta", "Both"`}},
		{name: "node affinity", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.NodeAffinity = "Replace" },
			want: []string{`nodeAffinity: Unsupported value: "Replace": supported values: "Add", "None"`}},
		{name: "unresolved", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Unresolved = "Deny" },
			want: []string{`unresolved: Unsupported value: "Deny": supported values: "Admit", "Refuse"`}},
		{name: "rule source", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Rules[0].Source = "NFS" },
			want: []string{`rules[0].source: Unsupported value: "NFS": supported values: "AWSElasticBlockStore", "AzureDisk", "CSI", "Cinder", "GCEPersistentDisk", "VsphereVolume"`}},
		{name: "rule driver on an in-tree source", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Rules[0].Driver = "x" },
			want: []string{`rules[0].driver: Invalid value: "x": only a CSI rule names a driver`}},
		{name: "rule expression", mutate: func(c *admission.PersistentVolumeLabelConfiguration) {
			c.Rules = append(c.Rules, csiRule)
			c.Rules[1].Match = "(["
		}, want: []string{"rules[1].match: Invalid value: \"([\": error parsing regexp: missing closing ]: `[`"}},
		{name: "rule without zone", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Rules[0].Zone = "" },
			want: []string{`rules[0].zone: Required value: the zone, or zones joined by "__"; it may use match's groups ($1, ${name})`}},
		{name: "rule zone list", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Rules[0].Zone = "a____b" },
			want: []string{`rules[0].zone: Invalid value: "a____b": "__" separated list ("a____b") must not contain an empty string`}},
		{name: "a zone from groups is checked when expanded", mutate: func(c *admission.PersistentVolumeLabelConfiguration) { c.Rules[0].Zone = "${zone}____" }},
		{name: "a literal zone with a bad expression", mutate: func(c *admission.PersistentVolumeLabelConfiguration) {
			c.Rules[0].Match, c.Rules[0].Zone = "(", "a____b"
		}, want: []string{"rules[0].match: Invalid value: \"(\": error parsing regexp: missing closing ): `(`"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validPersistentVolumeLabel()
			tc.mutate(cfg)
			var got []string
			for _, err := range ValidatePersistentVolumeLabelConfiguration(cfg, nil) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidatePersistentVolumeLabelConfigurationPath: the errors name the fields under
// fldPath.
func TestValidatePersistentVolumeLabelConfigurationPath(t *testing.T) {
	cfg := validPersistentVolumeLabel()
	cfg.LabelKeys = ""
	cfg.Rules[0].Zone = ""
	errs := ValidatePersistentVolumeLabelConfiguration(cfg, field.NewPath("configuration"))
	want := []string{"FieldValueNotSupported configuration.labelKeys", "FieldValueRequired configuration.rules[0].zone"}
	if diff := cmp.Diff(want, fieldErrors(errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
