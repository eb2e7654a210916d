// Package upstreamgroup serves resources of this distribution inside API groups that
// upstream serves (policy/v1beta1 PodSecurityPolicy beside policy/v1,
// admissionregistration.k8s.io/v1alpha1 InitializerConfiguration beside upstream's
// admissionregistration versions). A group is installed once, by one storage provider, and
// the built-in /apis/<group> handler claims every path under it, so neither a second
// provider nor a CRD can add to it: an Addition's provider serves the whole group, asking
// upstream's own provider for upstream's part, and HideUpstream keeps upstream's provider
// from installing the group a second time.
package upstreamgroup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/kubernetes"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
)

// Resource is a resource of ours and the constructor of its REST storage.
type Resource struct {
	schema.GroupVersionResource
	NewStorage func(generic.RESTOptionsGetter) (rest.Storage, error)
}

// UpstreamInputs are what upstream's providers are built from, as upstream's control plane
// builds them: the server's authorizer and a loopback client.
type UpstreamInputs struct {
	Authorizer authorizer.Authorizer
	Client     kubernetes.Interface
}

// Addition is what this distribution adds to one upstream group.
type Addition struct {
	// Group is the upstream group.
	Group string
	// Upstream builds upstream's storage provider of the group.
	Upstream func(UpstreamInputs) controlplaneapiserver.RESTStorageProvider
	// Resources are ours, each in Group.
	Resources []Resource
}

// Validate reports an Addition that would not serve its resources where it says: a
// resource outside its group, or an upstream provider of another group.
func (a Addition) Validate() error {
	if got := a.Upstream(UpstreamInputs{}).GroupName(); got != a.Group {
		return fmt.Errorf("the upstream provider of the group %q serves %q", a.Group, got)
	}
	for _, r := range a.Resources {
		if r.Group != a.Group {
			return fmt.Errorf("%v is not in the group %q it is added to", r.GroupVersionResource, a.Group)
		}
	}
	return nil
}

// Provider returns the storage provider that serves the Addition's group: upstream's
// versions as upstream's provider (built from in) serves them under resourceConfig (the
// server's resource configuration as the flags made it), plus the Addition's resources.
func (a Addition) Provider(resourceConfig serverstorage.APIResourceConfigSource, in UpstreamInputs) controlplaneapiserver.RESTStorageProvider {
	return provider{addition: a, upstream: a.Upstream(in), resourceConfig: resourceConfig}
}

type provider struct {
	addition       Addition
	upstream       controlplaneapiserver.RESTStorageProvider
	resourceConfig serverstorage.APIResourceConfigSource
}

var _ controlplaneapiserver.RESTStorageProvider = provider{}

// NewRESTStorage ignores the resource configuration it is given (the one that hides the
// group from upstream's provider) and uses its own.
func (p provider) NewRESTStorage(_ serverstorage.APIResourceConfigSource, optsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info, err := p.upstream.NewRESTStorage(p.resourceConfig, optsGetter)
	if err != nil {
		return genericapiserver.APIGroupInfo{}, err
	}
	if info.VersionedResourcesStorageMap == nil {
		info.VersionedResourcesStorageMap = map[string]map[string]rest.Storage{}
	}
	for _, r := range p.addition.Resources {
		storage, err := r.NewStorage(optsGetter)
		if err != nil {
			return genericapiserver.APIGroupInfo{}, fmt.Errorf("%s: %w", r.GroupResource(), err)
		}
		version := info.VersionedResourcesStorageMap[r.Version]
		if version == nil {
			version = map[string]rest.Storage{}
			info.VersionedResourcesStorageMap[r.Version] = version
		}
		if _, taken := version[r.Resource]; taken {
			return genericapiserver.APIGroupInfo{}, fmt.Errorf("%v is served by upstream too", r.GroupVersionResource)
		}
		version[r.Resource] = storage
	}
	return info, nil
}

func (p provider) GroupName() string { return p.addition.Group }

// HideUpstream wraps the server's resource configuration so that upstream's providers of the
// Additions' groups find none of their resources enabled and serve nothing: the Additions'
// providers serve those groups instead, with the configuration this wraps. Every other
// question is the wrapped configuration's to answer.
func HideUpstream(config serverstorage.APIResourceConfigSource, additions ...Addition) serverstorage.APIResourceConfigSource {
	hidden := map[string]bool{}
	ours := map[schema.GroupVersionResource]bool{}
	for _, a := range additions {
		hidden[a.Group] = true
		for _, r := range a.Resources {
			ours[r.GroupVersionResource] = true
		}
	}
	return hideUpstream{APIResourceConfigSource: config, groups: hidden, ours: ours}
}

type hideUpstream struct {
	serverstorage.APIResourceConfigSource
	groups map[string]bool
	ours   map[schema.GroupVersionResource]bool
}

// ResourceEnabled is false for upstream's resources of a hidden group, which upstream's
// provider asks about; as configured for everything else.
func (c hideUpstream) ResourceEnabled(resource schema.GroupVersionResource) bool {
	if c.groups[resource.Group] && !c.ours[resource] {
		return false
	}
	return c.APIResourceConfigSource.ResourceEnabled(resource)
}
