package preflight

import (
	"strings"
	"testing"
)

func TestAddAPIServiceStates(t *testing.T) {
	tests := []struct {
		name                    string
		states                  []apiServiceState
		wantProblems, wantNotes []string
	}{
		{name: "none registered", states: []apiServiceState{{name: "v1beta1.policy"}, {name: "v1alpha1.admissionregistration.k8s.io"}}},
		{
			name:      "registered and served: a server of ours answered",
			states:    []apiServiceState{{name: "v1beta1.policy", registered: true, served: true}},
			wantNotes: []string{"APIService v1beta1.policy is served by the API server that answered, a Portcullis one"},
		},
		{
			name:         "registered and not served: left behind, or a stock server answered during a mix",
			states:       []apiServiceState{{name: "v1beta1.policy"}, {name: "v1alpha1.admissionregistration.k8s.io", registered: true}},
			wantProblems: []string{"APIService v1alpha1.admissionregistration.k8s.io points at nothing on the API server that answered (stock serves nothing there): once every API server runs stock, legacy discovery (/apis) fails for every client that reads it"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &PreflightReport{}
			r.addAPIServiceStates(tt.states)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"problems", r.Problems, tt.wantProblems}, {"notes", r.Notes, tt.wantNotes}} {
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
