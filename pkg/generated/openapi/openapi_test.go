package openapi

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	admissionregistrationinstall "github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/install"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
)

func ref(name string) spec.Ref {
	return spec.MustCreateRef("#/definitions/" + common.EscapeJsonPointer(name))
}

// TestMergesWithUpstream checks that our definitions can be added to upstream's (of the
// minor built): upstream defines none of them, and every reference of ours resolves in the
// union, as the server merges them.
func TestMergesWithUpstream(t *testing.T) {
	ours := GetOpenAPIDefinitions(ref)
	upstream := upstreamopenapi.GetOpenAPIDefinitions(ref)

	own := 0
	for name := range ours {
		if _, shared := upstream[name]; shared {
			t.Errorf("definition %s is upstream's too: the server would replace upstream's", name)
			continue
		}
		own++
		if !strings.HasPrefix(name, "io.k8s.api.policy.v1beta1.") && !strings.HasPrefix(name, "io.k8s.api.admissionregistration.v1alpha1.") {
			t.Errorf("definition %s is neither a PodSecurityPolicy type nor an InitializerConfiguration type", name)
		}
	}
	if own != 14+4 {
		t.Errorf("%d definitions of ours that upstream does not have, want the 14 PodSecurityPolicy types and the 4 InitializerConfiguration types", own)
	}
	for name, def := range ours {
		for _, dep := range def.Dependencies {
			_, inOurs := ours[dep]
			_, inUpstream := upstream[dep]
			if !inOurs && !inUpstream {
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
	admissionregistrationinstall.Install(scheme)
	defs := GetOpenAPIDefinitions(ref)
	for _, gvk := range []schema.GroupVersionKind{
		policyv1beta1.SchemeGroupVersion.WithKind("PodSecurityPolicy"),
		policyv1beta1.SchemeGroupVersion.WithKind("PodSecurityPolicyList"),
		admissionregistrationv1alpha1.SchemeGroupVersion.WithKind("InitializerConfiguration"),
		admissionregistrationv1alpha1.SchemeGroupVersion.WithKind("InitializerConfigurationList"),
	} {
		name, err := scheme.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			t.Fatalf("ToOpenAPIDefinitionName(%v): %v", gvk, err)
		}
		if want := "io.k8s.api." + strings.TrimSuffix(gvk.Group, ".k8s.io") + "." + gvk.Version + "." + gvk.Kind; name != want {
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
