package admission

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Portcullis's admission configuration kinds.
const GroupName = "admission.portcullis.io"

// SchemeGroupVersion is the internal version of admission.portcullis.io.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	// SchemeBuilder collects the functions that add the internal kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes lists every kind of the group: one list, which the versioned package and
// the round-trip test are held to.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&PortcullisConfiguration{},
		&WebhookConfigurationGuardConfiguration{},
		&InitialResourcesConfiguration{},
		&PersistentVolumeLabelConfiguration{},
		// The forms of earlier releases (pkg/admission/portcullisconfig/legacy.go).
		&EnforcementConfiguration{},
		&WebhookDispatchConfiguration{},
	)
	return nil
}
