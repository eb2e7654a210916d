package selinux

import (
	"reflect"
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
