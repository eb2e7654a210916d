package group

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func i64(v int64) *int64 { return &v }

var ranges = []policy.IDRange{{Min: 1, Max: 65535}, {Min: 70000, Max: 70000}}

func strategies(t *testing.T) (must, may, any GroupStrategy) {
	t.Helper()
	var err error
	if must, err = NewMustRunAs(ranges); err != nil {
		t.Fatal(err)
	}
	if may, err = NewMayRunAs(ranges); err != nil {
		t.Fatal(err)
	}
	any, _ = NewRunAsAny()
	return must, may, any
}

func TestNewRequiresRanges(t *testing.T) {
	if _, err := NewMustRunAs(nil); err == nil {
		t.Error("MustRunAs: want error")
	}
	if _, err := NewMayRunAs(nil); err == nil {
		t.Error("MayRunAs: want error")
	}
}

func TestGenerate(t *testing.T) {
	must, may, any := strategies(t)
	tests := []struct {
		name       string
		s          GroupStrategy
		wantList   []int64
		wantSingle *int64
	}{
		{"MustRunAs", must, []int64{1}, i64(1)},
		{"MayRunAs", may, nil, nil},
		{"RunAsAny", any, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, _ := tc.s.Generate(&api.Pod{})
			if !reflect.DeepEqual(list, tc.wantList) {
				t.Errorf("Generate = %v, want %v", list, tc.wantList)
			}
			single, _ := tc.s.GenerateSingle(&api.Pod{})
			if !reflect.DeepEqual(single, tc.wantSingle) {
				t.Errorf("GenerateSingle = %v, want %v", single, tc.wantSingle)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	must, may, any := strategies(t)
	p := field.NewPath("spec", "securityContext", "supplementalGroups")
	tests := []struct {
		name   string
		s      GroupStrategy
		groups []int64
		want   []string
	}{
		{"MustRunAs empty", must, nil, []string{"spec.securityContext.supplementalGroups: Invalid value: null: unable to validate empty groups against required ranges"}},
		{"MustRunAs in ranges", must, []int64{1, 65535, 70000}, nil},
		{"MustRunAs out of range", must, []int64{1, 0, 65536}, []string{
			"spec.securityContext.supplementalGroups[1]: Invalid value: 0: group 0 must be in the ranges: [1-65535, 70000]",
			"spec.securityContext.supplementalGroups[2]: Invalid value: 65536: group 65536 must be in the ranges: [1-65535, 70000]",
		}},
		{"MayRunAs empty", may, nil, nil},
		{"MayRunAs out of range", may, []int64{0}, []string{"spec.securityContext.supplementalGroups[0]: Invalid value: 0: group 0 must be in the ranges: [1-65535, 70000]"}},
		{"RunAsAny", any, []int64{0}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range tc.s.Validate(p, &api.Pod{}, tc.groups) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateSingle(t *testing.T) {
	must, may, any := strategies(t)
	p := field.NewPath("spec", "securityContext", "fsGroup")
	tests := []struct {
		name  string
		s     GroupStrategy
		group *int64
		want  string
	}{
		{"MustRunAs unset", must, nil, "spec.securityContext.fsGroup: Required value: unable to validate an empty group against required ranges"},
		{"MustRunAs in range", must, i64(100), ""},
		{"MustRunAs out of range", must, i64(0), "spec.securityContext.fsGroup: Invalid value: 0: group 0 must be in the ranges: [1-65535, 70000]"},
		{"MayRunAs unset", may, nil, ""},
		{"MayRunAs out of range", may, i64(70001), "spec.securityContext.fsGroup: Invalid value: 70001: group 70001 must be in the ranges: [1-65535, 70000]"},
		{"RunAsAny", any, i64(0), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if errs := tc.s.ValidateSingle(p, &api.Pod{}, tc.group); len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
