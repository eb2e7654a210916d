package group

import (
	"reflect"
	"strings"
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
		{"MustRunAs unset", must, nil, "spec.securityContext.fsGroup: Invalid value: null: unable to validate empty groups against required ranges"},
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

// The cases of 1.24's mustrunas_test.go and mayrunas_test.go (TestValidate,
// TestMayRunAsValidate): the same inputs and verdicts; the ranges in the messages are printed
// as "[1-3, 4]" where 1.24 printed Go's "[{1 3} {4 4}]".
func TestValidate124(t *testing.T) {
	r := func(pairs ...int64) []policy.IDRange {
		var out []policy.IDRange
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, policy.IDRange{Min: pairs[i], Max: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name     string
		required bool // MustRunAs; else MayRunAs
		ranges   []policy.IDRange
		groups   []int64
		want     []string // parts of each error, in order
	}{
		{name: "MustRunAs: nil security context", required: true, ranges: r(1, 3), want: []string{"unable to validate empty groups against required ranges"}},
		{name: "MustRunAs: empty groups", required: true, ranges: r(1, 3), groups: []int64{}, want: []string{"unable to validate empty groups against required ranges"}},
		{name: "MustRunAs: not in range", required: true, ranges: r(1, 3, 4, 4), groups: []int64{5}, want: []string{"group 5 must be in the ranges: [1-3, 4]"}},
		{name: "MustRunAs: in range 1", required: true, ranges: r(1, 3), groups: []int64{2}},
		{name: "MustRunAs: in range boundary min", required: true, ranges: r(1, 3), groups: []int64{1}},
		{name: "MustRunAs: in range boundary max", required: true, ranges: r(1, 3), groups: []int64{3}},
		{name: "MustRunAs: singular range", required: true, ranges: r(4, 4), groups: []int64{4}},
		{name: "MayRunAs: empty groups", ranges: r(1, 3)},
		{name: "MayRunAs: not in range", ranges: r(1, 3, 4, 4), groups: []int64{5}, want: []string{"group 5 must be in the ranges: [1-3, 4]"}},
		{name: "MayRunAs: not in ranges - multiple groups", ranges: r(1, 3, 15, 70), groups: []int64{5, 10, 2020}, want: []string{
			"group 5 must be in the ranges: [1-3, 15-70]", "group 10 must be in the ranges: [1-3, 15-70]", "group 2020 must be in the ranges: [1-3, 15-70]"}},
		{name: "MayRunAs: not in ranges - one of multiple groups does not match", ranges: r(1, 5, 8, 12, 15, 70), groups: []int64{5, 10, 2020},
			want: []string{"group 2020 must be in the ranges: [1-5, 8-12, 15-70]"}},
		{name: "MayRunAs: in range 1", ranges: r(1, 3), groups: []int64{2}},
		{name: "MayRunAs: in range boundary min", ranges: r(1, 3), groups: []int64{1}},
		{name: "MayRunAs: in range boundary max", ranges: r(1, 3), groups: []int64{3}},
		{name: "MayRunAs: singular range", ranges: r(4, 4), groups: []int64{4}},
		{name: "MayRunAs: in one of multiple ranges", ranges: r(1, 4, 10, 15), groups: []int64{4}},
		{name: "MayRunAs: multiple groups matches one range", ranges: r(1, 20), groups: []int64{4, 8, 12}},
		{name: "MayRunAs: multiple groups match multiple ranges", ranges: r(1, 4, 200, 2000, 7, 11, 5, 7, 17, 53, 12, 71), groups: []int64{4, 8, 12}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newStrategy := NewMayRunAs
			if tc.required {
				newStrategy = NewMustRunAs
			}
			s, err := newStrategy(tc.ranges)
			if err != nil {
				t.Fatal(err)
			}
			errs := s.Validate(field.NewPath(""), &api.Pod{}, tc.groups)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d containing %q", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d: %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}
