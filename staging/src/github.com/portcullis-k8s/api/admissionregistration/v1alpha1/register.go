package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of InitializerConfiguration.
const GroupName = "admissionregistration.k8s.io"

// SchemeGroupVersion is admissionregistration.k8s.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the InitializerConfiguration resource.
var Resource = SchemeGroupVersion.WithResource("initializerconfigurations")

var (
	// SchemeBuilder adds this package's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds InitializerConfiguration and InitializerConfigurationList to a
	// scheme, beside whatever upstream's v1alpha1 registers there.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&InitializerConfiguration{},
		&InitializerConfigurationList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
