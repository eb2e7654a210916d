// Package install adds admissionregistration.k8s.io/v1alpha1 InitializerConfiguration and its
// internal version to a scheme that already knows upstream's admissionregistration group.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/v1alpha1"
)

// Install registers the internal InitializerConfiguration types and their
// admissionregistration.k8s.io/v1alpha1 form (types, conversions) in scheme. It leaves the
// group's version priority alone: v1 stays its preferred and storage version, as upstream's
// install sets it.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(admissionregistration.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
}
