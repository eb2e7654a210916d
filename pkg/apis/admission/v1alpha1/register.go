package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// SchemeGroupVersion is admission.portcullis.io/v1alpha1.
var SchemeGroupVersion = admissionv1alpha1.SchemeGroupVersion

var (
	// localSchemeBuilder adds the versioned kinds, then (from the generated file's init) their
	// conversions and (from this file's) their defaults.
	localSchemeBuilder = runtime.NewSchemeBuilder(admissionv1alpha1.AddToScheme)
	// AddToScheme adds admission.portcullis.io/v1alpha1's kinds, conversions and defaults to a
	// scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(RegisterDefaults)
}
