package selinux

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func TestNewMustRunAs(t *testing.T) {
	if _, err := NewMustRunAs(nil); err == nil {
		t.Error("nil options: want error")
	}
	if _, err := NewMustRunAs(&policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs}); err == nil {
		t.Error("nil SELinuxOptions: want error")
	}
}

func TestGenerate(t *testing.T) {
	opts := &policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0:c0,c1"}}
	must, _ := NewMustRunAs(opts)
	got, _ := must.Generate(&api.Pod{}, nil)
	if !reflect.DeepEqual(got, opts.SELinuxOptions) {
		t.Fatalf("got %+v", got)
	}
	if got == opts.SELinuxOptions {
		t.Fatal("Generate returned the policy's own object")
	}
	any, _ := NewRunAsAny(nil)
	if got, _ := any.Generate(&api.Pod{}, nil); got != nil {
		t.Fatalf("RunAsAny generated %+v", got)
	}
}

func TestValidate(t *testing.T) {
	must, _ := NewMustRunAs(&policy.SELinuxStrategyOptions{SELinuxOptions: &api.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0:c0,c1"}})
	any, _ := NewRunAsAny(nil)
	p := field.NewPath("spec", "securityContext", "seLinuxOptions")
	tests := []struct {
		name string
		s    SELinuxStrategy
		opts *api.SELinuxOptions
		want []string
	}{
		{"match", must, &api.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0:c0,c1"}, nil},
		{"categories in another order", must, &api.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0:c1,c0"}, nil},
		{"unset", must, nil, []string{"spec.securityContext.seLinuxOptions: Required value"}},
		{"other sensitivity", must, &api.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s1:c0,c1"}, []string{
			"spec.securityContext.seLinuxOptions.level: Invalid value: \"s1:c0,c1\": must be s0:c0,c1"}},
		{"all differ", must, &api.SELinuxOptions{User: "x", Role: "y", Type: "z", Level: "s0"}, []string{
			"spec.securityContext.seLinuxOptions.level: Invalid value: \"s0\": must be s0:c0,c1",
			"spec.securityContext.seLinuxOptions.role: Invalid value: \"y\": must be r",
			"spec.securityContext.seLinuxOptions.type: Invalid value: \"z\": must be t",
			"spec.securityContext.seLinuxOptions.user: Invalid value: \"x\": must be u",
		}},
		{"RunAsAny", any, &api.SELinuxOptions{User: "x"}, nil},
		{"RunAsAny unset", any, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range tc.s.Validate(p, &api.Pod{}, nil, tc.opts) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The cases of 1.24's mustrunas_test.go (TestMustRunAsValidate): the same inputs, verdicts
// and erring field.
func TestMustRunAsValidate124(t *testing.T) {
	valid := func(mutate func(*api.SELinuxOptions)) *api.SELinuxOptions {
		o := &api.SELinuxOptions{User: "user", Role: "role", Level: "s0:c0,c6", Type: "type"}
		if mutate != nil {
			mutate(o)
		}
		return o
	}
	level := func(l string) func(*api.SELinuxOptions) { return func(o *api.SELinuxOptions) { o.Level = l } }
	tests := []struct {
		name     string
		pod, psp *api.SELinuxOptions
		want     string // a part of the only error; empty: admitted
	}{
		{"invalid role", valid(func(o *api.SELinuxOptions) { o.Role = "invalid" }), valid(nil), "role: Invalid value"},
		{"invalid user", valid(func(o *api.SELinuxOptions) { o.User = "invalid" }), valid(nil), "user: Invalid value"},
		{"levels are not equal", valid(level("s0")), valid(level("s0:c1,c2")), "level: Invalid value"},
		{"levels differ by sensitivity", valid(level("s0:c6")), valid(level("s1:c6")), "level: Invalid value"},
		{"levels differ by categories", valid(level("s0:c0,c8")), valid(level("s0:c1,c7")), "level: Invalid value"},
		{"valid", valid(nil), valid(nil), ""},
		{"valid with different order of categories", valid(level("s0:c6,c0")), valid(nil), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewMustRunAs(&policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: tc.psp})
			if err != nil {
				t.Fatal(err)
			}
			errs := s.Validate(field.NewPath("seLinuxOptions"), &api.Pod{}, &api.Container{}, tc.pod)
			switch {
			case tc.want == "" && len(errs) != 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
