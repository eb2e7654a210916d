// Package rest adds admissionregistration.k8s.io/v1alpha1 InitializerConfiguration to the
// admissionregistration API group, beside upstream's versions of it served as stock serves
// them.
package rest

import (
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/discovery"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	admissionregistrationrest "k8s.io/kubernetes/pkg/registry/admissionregistration/rest"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
	icstorage "github.com/portcullis-k8s/portcullis/pkg/registry/admissionregistration/initializerconfiguration/storage"
	"github.com/portcullis-k8s/portcullis/pkg/registry/upstreamgroup"
)

// InitializerConfigurations is the resource this distribution adds to the
// admissionregistration group.
var InitializerConfigurations = admissionregistrationv1alpha1.Resource

// Addition is admissionregistration.k8s.io/v1alpha1 initializerconfigurations in upstream's
// admissionregistration group. Upstream's provider is built as upstream's control plane
// builds it: with the server's authorizer and a loopback discovery client.
func Addition() upstreamgroup.Addition {
	return upstreamgroup.Addition{
		Group: admissionregistration.GroupName,
		Upstream: func(in upstreamgroup.UpstreamInputs) controlplaneapiserver.RESTStorageProvider {
			var discoveryClient discovery.DiscoveryInterface
			if in.Client != nil {
				discoveryClient = in.Client.Discovery()
			}
			return admissionregistrationrest.RESTStorageProvider{Authorizer: in.Authorizer, DiscoveryClient: discoveryClient}
		},
		Resources: []upstreamgroup.Resource{{
			GroupVersionResource: InitializerConfigurations,
			NewStorage: func(optsGetter generic.RESTOptionsGetter) (rest.Storage, error) {
				return icstorage.NewREST(optsGetter)
			},
		}},
	}
}
