package preflight

import (
	"strings"
	"testing"
)

func TestAddAPIServiceStates(t *testing.T) {
	left := []apiServiceState{{name: "v1beta1.policy"}, {name: "v1alpha1.admissionregistration.k8s.io", registered: true}}
	tests := []struct {
		name                                  string
		states                                []apiServiceState
		alone                                 bool
		wantProblems, wantWarnings, wantNotes []string
	}{
		{name: "none registered", alone: true, states: []apiServiceState{{name: "v1beta1.policy"}, {name: "v1alpha1.admissionregistration.k8s.io"}}},
		{
			name:      "served with our resource: a server of ours answered",
			alone:     true,
			states:    []apiServiceState{{name: "v1beta1.policy", registered: true, answered: true, ours: true}},
			wantNotes: []string{"APIService v1beta1.policy is served by the API server that answered, a Portcullis one"},
		},
		{
			name:      "served without our resource: stock turns the version on for its own",
			alone:     true,
			states:    []apiServiceState{{name: "v1alpha1.admissionregistration.k8s.io", registered: true, answered: true}},
			wantNotes: []string{"APIService v1alpha1.admissionregistration.k8s.io is for upstream's own resources of its version"},
		},
		{
			name:         "left behind, checked alone",
			alone:        true,
			states:       left,
			wantProblems: []string{"APIService v1alpha1.admissionregistration.k8s.io points at nothing: the API server that answered serves nothing in its version"},
		},
		{
			name:         "not served, beside a manifest: a stock server of a half-done rollback answers the same",
			states:       left,
			wantWarnings: []string{"APIService v1alpha1.admissionregistration.k8s.io: the API server that answered serves nothing in its version"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &PreflightReport{}
			r.addAPIServiceStates(tt.states, tt.alone)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"problems", r.Problems, tt.wantProblems}, {"warnings", r.Warnings, tt.wantWarnings}, {"notes", r.Notes, tt.wantNotes}} {
				if len(c.got) != len(c.want) {
					t.Fatalf("%s: %q, want %d", c.what, c.got, len(c.want))
				}
				for i := range c.want {
					if !strings.HasPrefix(c.got[i], c.want[i]) {
						t.Errorf("%s[%d] = %q, want it to start %q", c.what, i, c.got[i], c.want[i])
					}
				}
			}
		})
	}
}
