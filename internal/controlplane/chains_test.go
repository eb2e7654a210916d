package controlplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChains(t *testing.T) {
	log := []byte(`I1121 20:03:21.862669   27105 plugins.go:157] Loaded 3 mutating admission controller(s) successfully in the following order: NamespaceLifecycle,LimitRanger,MutatingAdmissionWebhook.
I1121 20:03:21.862701   27105 plugins.go:160] Loaded 2 validating admission controller(s) successfully in the following order: SecurityContextDeny,ResourceQuota.
`)
	got, err := ParseChains(log)
	if err != nil {
		t.Fatal(err)
	}
	want := Chains{
		Mutating:   []string{"NamespaceLifecycle", "LimitRanger", "MutatingAdmissionWebhook"},
		Validating: []string{"SecurityContextDeny", "ResourceQuota"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseChains([]byte("I1121 nothing here\n")); err == nil {
		t.Error("a log without chains parsed without error")
	}
}
