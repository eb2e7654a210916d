package v1alpha1

import (
	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
)

// SchemeGroupVersion is admissionregistration.k8s.io/v1alpha1.
var SchemeGroupVersion = admissionregistrationv1alpha1.SchemeGroupVersion

var (
	// localSchemeBuilder extends the versioned package's SchemeBuilder, so AddToScheme adds
	// the versioned types together with their conversions (registered by the generated
	// file's init).
	localSchemeBuilder = &admissionregistrationv1alpha1.SchemeBuilder
	// AddToScheme adds admissionregistration.k8s.io/v1alpha1 InitializerConfiguration and its
	// conversions to and from the internal version to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated files register their conversions themselves; the defaults
	// (defaults.go) are registered here.
	localSchemeBuilder.Register(RegisterDefaults)
}
