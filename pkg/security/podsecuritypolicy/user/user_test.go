package user

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func i64(v int64) *int64 { return &v }
func b(v bool) *bool     { return &v }

func TestNew(t *testing.T) {
	if _, err := NewMustRunAs(nil); err == nil {
		t.Error("MustRunAs without options: want error")
	}
	if _, err := NewMustRunAs(&policy.RunAsUserStrategyOptions{}); err == nil {
		t.Error("MustRunAs without ranges: want error")
	}
}

func TestGenerate(t *testing.T) {
	opts := &policy.RunAsUserStrategyOptions{Ranges: []policy.IDRange{{Min: 1000, Max: 2000}, {Min: 5, Max: 6}}}
	must, _ := NewMustRunAs(opts)
	nonroot, _ := NewRunAsNonRoot(opts)
	any, _ := NewRunAsAny(opts)
	tests := []struct {
		name string
		s    RunAsUserStrategy
		want *int64
	}{
		{"MustRunAs defaults to the first range's min", must, i64(1000)},
		{"MustRunAsNonRoot has no uid", nonroot, nil},
		{"RunAsAny has no uid", any, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.Generate(&api.Pod{}, &api.Container{})
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// The default must not alias the policy.
	got, _ := must.Generate(&api.Pod{}, &api.Container{})
	*got = 0
	if opts.Ranges[0].Min != 1000 {
		t.Fatal("Generate aliased the policy's range")
	}
}

func TestValidate(t *testing.T) {
	must, _ := NewMustRunAs(&policy.RunAsUserStrategyOptions{Ranges: []policy.IDRange{{Min: 1000, Max: 2000}}})
	nonroot, _ := NewRunAsNonRoot(nil)
	any, _ := NewRunAsAny(nil)
	scPath := field.NewPath("spec", "containers").Index(0).Child("securityContext")
	tests := []struct {
		name      string
		s         RunAsUserStrategy
		nonRoot   *bool
		uid       *int64
		wantError string
	}{
		{"MustRunAs in range", must, nil, i64(1500), ""},
		{"MustRunAs range ends", must, nil, i64(2000), ""},
		{"MustRunAs unset", must, nil, nil, "spec.containers[0].securityContext.runAsUser: Required value"},
		{"MustRunAs out of range", must, nil, i64(999), "spec.containers[0].securityContext.runAsUser: Invalid value: 999: must be in the ranges: [1000-2000]"},
		{"NonRoot nothing set", nonroot, nil, nil, "spec.containers[0].securityContext.runAsNonRoot: Required value: must be true"},
		{"NonRoot runAsNonRoot true", nonroot, b(true), nil, ""},
		{"NonRoot runAsNonRoot false", nonroot, b(false), i64(5), "spec.containers[0].securityContext.runAsNonRoot: Invalid value: false: must be true"},
		{"NonRoot uid 0", nonroot, nil, i64(0), "spec.containers[0].securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden"},
		{"NonRoot uid 0 despite runAsNonRoot", nonroot, b(true), i64(0), "spec.containers[0].securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden"},
		{"NonRoot uid 1", nonroot, nil, i64(1), ""},
		{"RunAsAny root", any, b(false), i64(0), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.s.Validate(scPath, &api.Pod{}, &api.Container{}, tc.nonRoot, tc.uid)
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.wantError {
				t.Fatalf("got %q, want %q", got, tc.wantError)
			}
		})
	}
}

// The cases of 1.24's mustrunas_test.go (TestValidate) and nonroot_test.go
// (TestNonRootValidate): the same inputs and verdicts, and for MustRunAs the same error kind.
func TestValidate124(t *testing.T) {
	must, err := NewMustRunAs(&policy.RunAsUserStrategyOptions{Ranges: []policy.IDRange{{Min: 1, Max: 1}, {Min: 10, Max: 20}}})
	if err != nil {
		t.Fatal(err)
	}
	nonroot, err := NewRunAsNonRoot(&policy.RunAsUserStrategyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := field.NewPath("spec", "containers").Index(0).Child("securityContext")
	tests := []struct {
		name         string
		s            RunAsUserStrategy
		runAsNonRoot *bool
		runAsUser    *int64
		want         string // a part of the only error; empty: admitted
	}{
		{name: "MustRunAs: good container", s: must, runAsUser: i64(15)},
		{name: "MustRunAs: nil run as user", s: must, want: "runAsUser: Required"},
		{name: "MustRunAs: invalid id", s: must, runAsUser: i64(21), want: "runAsUser: Invalid"},
		{name: "MustRunAsNonRoot: root uid", s: nonroot, runAsUser: i64(0), want: "runAsUser"},
		{name: "MustRunAsNonRoot: non-root uid", s: nonroot, runAsUser: i64(1)},
		{name: "MustRunAsNonRoot: runAsNonRoot false", s: nonroot, runAsNonRoot: b(false), want: "runAsNonRoot"},
		{name: "MustRunAsNonRoot: runAsNonRoot true and non-root uid", s: nonroot, runAsNonRoot: b(true), runAsUser: i64(1)},
		{name: "MustRunAsNonRoot: neither set", s: nonroot, want: "runAsNonRoot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.s.Validate(path, &api.Pod{}, &api.Container{}, tc.runAsNonRoot, tc.runAsUser)
			switch {
			case tc.want == "" && len(errs) != 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
