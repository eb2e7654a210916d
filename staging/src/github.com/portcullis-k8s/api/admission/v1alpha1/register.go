package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Portcullis's admission configuration kinds.
const GroupName = "admission.portcullis.io"

// SchemeGroupVersion is admission.portcullis.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// localSchemeBuilder collects each kind's registration; every kind's file appends to it
	// from its own init, so this file names no kind.
	localSchemeBuilder runtime.SchemeBuilder
	// AddToScheme adds every kind of this version to a scheme. The method value binds a
	// pointer to localSchemeBuilder, so registrations appended by init functions (which run
	// after this variable is initialized) are still seen.
	AddToScheme = localSchemeBuilder.AddToScheme
)
