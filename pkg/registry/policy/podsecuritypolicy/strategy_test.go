package podsecuritypolicy

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/registry/updatestrategy"
)

func validPolicy() *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "psp", ResourceVersion: "1"},
		Spec: policy.PodSecurityPolicySpec{
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
			AllowPrivilegeEscalation: true,
		},
	}
}

func TestStrategyScopeAndUpdateRules(t *testing.T) {
	ctx := context.Background()
	if Strategy.NamespaceScoped() {
		t.Error("PodSecurityPolicy is namespaced, want cluster-scoped")
	}
	if updatestrategy.CreateOnUpdate(ctx, Strategy) {
		t.Error("an update of a missing policy creates it; 1.24 refused")
	}
	if !updatestrategy.UnconditionalUpdate(ctx, Strategy) {
		t.Error("an update without resourceVersion is refused; 1.24 allowed it")
	}
}

func TestStrategyValidates(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		mutate  func(*policy.PodSecurityPolicy)
		wantErr string // a part of the only error's field path; empty: valid
	}{
		{name: "valid", mutate: func(*policy.PodSecurityPolicy) {}},
		{name: "generic ephemeral volumes may be named", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.Ephemeral} }},
		{name: "a missing rule", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.RunAsUser.Rule = "" }, wantErr: "spec.runAsUser.rule"},
		{name: "an unknown volume type", mutate: func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{"floppy"} }, wantErr: "spec.volumes[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := validPolicy()
			tc.mutate(psp)
			for phase, errs := range map[string][]string{
				"create": errorFields(Strategy.Validate(ctx, psp)),
				"update": errorFields(Strategy.ValidateUpdate(ctx, psp, validPolicy())),
			} {
				switch {
				case tc.wantErr == "" && len(errs) > 0:
					t.Errorf("%s: unexpected errors at %v", phase, errs)
				case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.wantErr)):
					t.Errorf("%s: errors at %v, want one at %s", phase, errs, tc.wantErr)
				}
			}
		})
	}
}

func errorFields[E interface{ Error() string }](errs []E) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestStrategyWarnsOfHostPortRangesThatCannotMeanWhatTheySay(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		ranges []policy.HostPortRange
		want   []string // parts of each warning, in order
	}{
		{name: "within 0-65535", ranges: []policy.HostPortRange{{Min: 0, Max: 65535}, {Min: 80, Max: 80}}},
		{name: "1.24's own fixture, max 65536", ranges: []policy.HostPortRange{{Min: 1, Max: 65536}},
			want: []string{"spec.hostPorts[0]: 1-65536 reaches outside 0-65535"}},
		{name: "inverted", ranges: []policy.HostPortRange{{Min: 80, Max: 80}, {Min: 90, Max: 80}},
			want: []string{"spec.hostPorts[1]: min 90 is greater than max 80"}},
		{name: "negative", ranges: []policy.HostPortRange{{Min: -1, Max: 10}},
			want: []string{"spec.hostPorts[0]: -1-10 reaches outside"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := validPolicy()
			psp.Spec.HostPorts = tc.ranges
			if errs := Strategy.Validate(ctx, psp); len(errs) != 0 {
				t.Fatalf("refused %v, which 1.24 accepted: %v", tc.ranges, errs)
			}
			for phase, got := range map[string][]string{
				"create": Strategy.WarningsOnCreate(ctx, psp),
				"update": Strategy.WarningsOnUpdate(ctx, psp, validPolicy()),
			} {
				if len(got) != len(tc.want) || !slices.EqualFunc(got, tc.want, strings.Contains) {
					t.Errorf("%s: warnings %q, want ones containing %q", phase, got, tc.want)
				}
			}
		})
	}
}
