package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of PodPreset.
const GroupName = "settings.k8s.io"

// SchemeGroupVersion is settings.k8s.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the PodPreset resource.
var Resource = SchemeGroupVersion.WithResource("podpresets")

var (
	// SchemeBuilder adds this version's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this version's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodPreset{}, &PodPresetList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
