package admission

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
)

// servableResources are the resources of ours, one a version, that PortcullisConfiguration's
// servedAPIs may name (cmd/kube-apiserver/app's TestNativeAPIsAreTheServableAPIs holds them
// to what the native APIs serve).
var servableResources = []schema.GroupVersionResource{
	policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies"),
	admissionregistrationv1alpha1.SchemeGroupVersion.WithResource("initializerconfigurations"),
}

// ServableAPIs are the APIs of this distribution that servedAPIs may name: the group
// versions of ours the server can serve in upstream groups.
func ServableAPIs() []schema.GroupVersion {
	apis := make([]schema.GroupVersion, len(servableResources))
	for i, r := range servableResources {
		apis[i] = r.GroupVersion()
	}
	return apis
}

// ServableResources are the resources of ours in the versions ServableAPIs names, in the
// same order: where a version is also stock's (admissionregistration.k8s.io/v1alpha1 with
// upstream's alpha resources turned on), only these say the server is ours.
func ServableResources() []schema.GroupVersionResource { return slices.Clone(servableResources) }
