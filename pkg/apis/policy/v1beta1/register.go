package v1beta1

import (
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of PodSecurityPolicy.
const GroupName = "policy"

// SchemeGroupVersion is policy/v1beta1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// localSchemeBuilder extends the versioned package's SchemeBuilder, so AddToScheme adds
	// the versioned types together with their conversions and defaults.
	localSchemeBuilder = &policyv1beta1.SchemeBuilder
	// AddToScheme adds policy/v1beta1 PodSecurityPolicy, its conversions to and from the
	// internal version, and its defaults to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Only hand-written functions are registered here; the generated files register
	// theirs, so the package compiles even while they are missing.
	localSchemeBuilder.Register(addDefaultingFuncs)
}
