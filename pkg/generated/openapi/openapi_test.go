package openapi

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
)

func ref(name string) spec.Ref {
	return spec.MustCreateRef("#/definitions/" + common.EscapeJsonPointer(name))
}

// TestMergesWithUpstream checks that our definitions can be added to upstream's: every name
// both define is defined identically, and every reference of ours resolves.
func TestMergesWithUpstream(t *testing.T) {
	ours := GetOpenAPIDefinitions(ref)
	upstream := upstreamopenapi.GetOpenAPIDefinitions(ref)

	own := 0
	for name, def := range ours {
		up, shared := upstream[name]
		if !shared {
			own++
			continue
		}
		if !reflect.DeepEqual(def.Schema, up.Schema) || !reflect.DeepEqual(def.Dependencies, up.Dependencies) {
			t.Errorf("definition %s differs from upstream's", name)
		}
	}
	if own != 14 {
		t.Errorf("%d definitions of ours that upstream does not have, want the 14 PodSecurityPolicy types", own)
	}
	for name, def := range ours {
		for _, dep := range def.Dependencies {
			if _, ok := ours[dep]; !ok {
				t.Errorf("definition %s depends on %s, which is not defined", name, dep)
			}
		}
	}
}

// TestNamesMatchTheScheme checks that the server's definition namer (which names kinds with
// Scheme.ToOpenAPIDefinitionName) finds our kinds under the names we define them with, so
// the published spec carries their x-kubernetes-group-version-kind.
func TestNamesMatchTheScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	defs := GetOpenAPIDefinitions(ref)
	for _, kind := range []string{"PodSecurityPolicy", "PodSecurityPolicyList"} {
		gvk := policyv1beta1.SchemeGroupVersion.WithKind(kind)
		name, err := scheme.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			t.Fatalf("ToOpenAPIDefinitionName(%v): %v", gvk, err)
		}
		if want := "io.k8s.api.policy.v1beta1." + kind; name != want {
			t.Errorf("ToOpenAPIDefinitionName(%v) = %q, want %q", gvk, name, want)
		}
		if _, ok := defs[name]; !ok {
			t.Errorf("no definition named %q", name)
		}
	}
	spec := defs[policyv1beta1.PodSecurityPolicySpec{}.OpenAPIModelName()].Schema
	for _, field := range []string{"volumes", "allowPrivilegeEscalation", "runtimeClass", "allowedCSIDrivers", "seLinux"} {
		if _, ok := spec.Properties[field]; !ok {
			t.Errorf("PodSecurityPolicySpec definition has no property %q", field)
		}
	}
}
