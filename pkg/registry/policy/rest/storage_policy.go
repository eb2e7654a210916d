// Package rest adds policy/v1beta1 PodSecurityPolicy to the policy API group, beside
// upstream's policy/v1 (PodDisruptionBudget) served as stock serves it.
package rest

import (
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	pspstorage "github.com/portcullis-k8s/portcullis/pkg/registry/policy/podsecuritypolicy/storage"
	"github.com/portcullis-k8s/portcullis/pkg/registry/upstreamgroup"
)

// PodSecurityPolicies is the resource this distribution adds to the policy group.
var PodSecurityPolicies = policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")

// Addition is policy/v1beta1 podsecuritypolicies in upstream's policy group.
func Addition() upstreamgroup.Addition {
	return upstreamgroup.Addition{
		Group: policy.GroupName,
		Upstream: func(upstreamgroup.UpstreamInputs) controlplaneapiserver.RESTStorageProvider {
			return policyrest.RESTStorageProvider{}
		},
		Resources: []upstreamgroup.Resource{{
			GroupVersionResource: PodSecurityPolicies,
			NewStorage: func(optsGetter generic.RESTOptionsGetter) (rest.Storage, error) {
				return pspstorage.NewREST(optsGetter)
			},
		}},
	}
}
