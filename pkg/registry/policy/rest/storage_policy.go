// Package rest serves the policy API group: upstream's policy/v1 (PodDisruptionBudget) as
// stock serves it, and policy/v1beta1 PodSecurityPolicy beside it.
package rest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	pspstorage "github.com/portcullis-k8s/portcullis/pkg/registry/policy/podsecuritypolicy/storage"
)

// PodSecurityPolicies is the resource this distribution adds to the policy group.
var PodSecurityPolicies = policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")

// StorageProvider serves the whole policy group, since a group is installed once: it asks
// upstream's own policy provider for its storage, then adds PodSecurityPolicy. The server
// must hide the policy group from upstream's provider (WithoutUpstreamPolicy), or the group
// would be installed twice.
type StorageProvider struct {
	// ResourceConfig is the server's resource configuration as the flags made it, which
	// upstream's provider reads to decide what of policy/v1 to serve.
	ResourceConfig serverstorage.APIResourceConfigSource
}

// NewRESTStorage returns the policy group: upstream's versions, plus v1beta1
// podsecuritypolicies. The resource configuration it is given is the one that hides the
// group from upstream, so it uses its own.
func (p StorageProvider) NewRESTStorage(_ serverstorage.APIResourceConfigSource, optsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info, err := policyrest.RESTStorageProvider{}.NewRESTStorage(p.ResourceConfig, optsGetter)
	if err != nil {
		return genericapiserver.APIGroupInfo{}, err
	}
	psp, err := pspstorage.NewREST(optsGetter)
	if err != nil {
		return genericapiserver.APIGroupInfo{}, fmt.Errorf("podsecuritypolicies: %w", err)
	}
	info.VersionedResourcesStorageMap[PodSecurityPolicies.Version] = map[string]rest.Storage{PodSecurityPolicies.Resource: psp}
	return info, nil
}

// GroupName is policy.
func (StorageProvider) GroupName() string { return policy.GroupName }

// WithoutUpstreamPolicy wraps the server's resource configuration so that upstream's policy
// provider finds none of its resources enabled and serves nothing; StorageProvider serves
// them instead, with the configuration this wraps. Every other question is the wrapped
// configuration's to answer.
func WithoutUpstreamPolicy(config serverstorage.APIResourceConfigSource) serverstorage.APIResourceConfigSource {
	return withoutUpstreamPolicy{config}
}

type withoutUpstreamPolicy struct {
	serverstorage.APIResourceConfigSource
}

// ResourceEnabled is false for upstream's policy resources, which upstream's provider asks
// about; true as configured for everything else.
func (c withoutUpstreamPolicy) ResourceEnabled(resource schema.GroupVersionResource) bool {
	if resource.Group == policy.GroupName && resource != PodSecurityPolicies {
		return false
	}
	return c.APIResourceConfigSource.ResourceEnabled(resource)
}
