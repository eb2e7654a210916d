package portcullisconfig

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
)

// legacyRuntimeConfigResources are the resources of ours that --runtime-config serves, the
// form of earlier releases: policy/v1beta1's, in which stock serves no resource (its
// PodDisruptionBudgets went in 1.25), so the flag can mean only ours. A stock kube-apiserver
// given the same flag starts and serves nothing there. In the other versions of ours stock
// serves resources of its own: there the flag is stock's and means only what it means there.
var legacyRuntimeConfigResources = []schema.GroupVersionResource{policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")}

// RuntimeConfigServes reports whether resources, the server's merged --runtime-config,
// serve gv as earlier releases did: the version, or a resource of ours in it, explicitly
// enabled.
func RuntimeConfigServes(resources serverstorage.APIResourceConfigSource, gv schema.GroupVersion) bool {
	for _, r := range legacyRuntimeConfigResources {
		if r.GroupVersion() == gv && (resources.VersionExplicitlyEnabled(gv) || resources.ResourceExplicitlyEnabled(r)) {
			return true
		}
	}
	return false
}

// LegacyRuntimeConfigResources are the resources RuntimeConfigServes looks for.
func LegacyRuntimeConfigResources() []schema.GroupVersionResource {
	return slices.Clone(legacyRuntimeConfigResources)
}

// RuntimeConfigDeprecation is the start-up warning, and preflight's, for a --runtime-config
// that serves gv (RuntimeConfigServes).
func RuntimeConfigDeprecation(gv schema.GroupVersion) string {
	return fmt.Sprintf("--runtime-config names %s, the form of earlier releases for serving it: list %s in the admission config file's "+
		"%s entry, servedAPIs, instead (a stock kube-apiserver reads the flag as enabling a version in which it serves nothing)", gv, gv, EntryName)
}
