// Package install adds admission.portcullis.io, internal and v1alpha1, to a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/v1alpha1"
)

// Install registers the internal kinds and their v1alpha1 form (types, conversions,
// defaults) in scheme, v1alpha1 preferred.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(admission.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion))
}
