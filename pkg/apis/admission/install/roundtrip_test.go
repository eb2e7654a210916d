package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/fuzzer"
)

// TestRoundTripTypes is upstream's round trip of every kind of the group: random internal
// objects to v1alpha1 and back (JSON and YAML), and random v1alpha1 objects through the
// internal version, unchanged.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, fuzzer.Funcs)
}

// TestEveryKindIsInstalled holds the internal and v1alpha1 kinds to each other: a kind in
// one version only would be left out of the round trip above.
func TestEveryKindIsInstalled(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	internal := scheme.KnownTypes(admission.SchemeGroupVersion)
	external := runtime.NewScheme()
	if err := admissionv1alpha1.AddToScheme(external); err != nil {
		t.Fatal(err)
	}
	versioned := external.KnownTypes(admissionv1alpha1.SchemeGroupVersion)
	kinds := map[string]bool{}
	for kind := range versioned {
		kinds[kind] = true
		if _, ok := internal[kind]; !ok {
			t.Errorf("%s is a kind of v1alpha1 without an internal form", kind)
		}
	}
	for kind := range internal {
		if !kinds[kind] && !scheme.Recognizes(schema.GroupVersionKind{Group: admission.GroupName, Version: "v1alpha1", Kind: kind}) {
			t.Errorf("%s is an internal kind without a v1alpha1 form", kind)
		}
	}
	if len(versioned) < 6 {
		t.Errorf("v1alpha1 has %d kinds, want at least the six of this release", len(versioned))
	}
}
