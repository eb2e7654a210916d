// Package storage is the REST storage of admissionregistration.k8s.io/v1alpha1
// InitializerConfiguration.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
	"github.com/portcullis-k8s/portcullis/pkg/registry/admissionregistration/initializerconfiguration"
)

// REST stores InitializerConfigurations.
type REST struct {
	*genericregistry.Store
}

var _ rest.StandardStorage = &REST{}

// NewREST returns the storage of InitializerConfigurations.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, error) {
	resource := admissionregistration.Resource("initializerconfigurations")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &admissionregistration.InitializerConfiguration{} },
		NewListFunc:               func() runtime.Object { return &admissionregistration.InitializerConfigurationList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: admissionregistration.Resource("initializerconfiguration"),

		CreateStrategy: initializerconfiguration.Strategy,
		UpdateStrategy: initializerconfiguration.Strategy,
		DeleteStrategy: initializerconfiguration.Strategy,

		// kubectl get prints the name and age, as it did in 1.13.
		TableConvertor: rest.NewDefaultTableConvertor(resource),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
