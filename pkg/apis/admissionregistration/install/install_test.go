package install

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	upstreaminstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"sigs.k8s.io/randfill"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration"
)

// newScheme returns a scheme with upstream's admissionregistration group and then ours, in
// the order the server installs them.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	upstreaminstall.Install(scheme)
	Install(scheme)
	return scheme
}

func TestInstallLeavesUpstreamsGroupAsItWas(t *testing.T) {
	upstreamOnly := runtime.NewScheme()
	upstreaminstall.Install(upstreamOnly)
	scheme := newScheme()
	if got, want := scheme.PrioritizedVersionsForGroup(admissionregistration.GroupName), upstreamOnly.PrioritizedVersionsForGroup(admissionregistration.GroupName); !reflect.DeepEqual(got, want) {
		t.Fatalf("PrioritizedVersionsForGroup = %v with ours installed, want upstream's %v", got, want)
	}
	for _, gvk := range []schema.GroupVersionKind{
		admissionregistrationv1alpha1.SchemeGroupVersion.WithKind("InitializerConfiguration"),
		admissionregistrationv1alpha1.SchemeGroupVersion.WithKind("InitializerConfigurationList"),
		admissionregistration.SchemeGroupVersion.WithKind("InitializerConfiguration"),
		// Upstream's kinds of the version are still there.
		admissionregistrationv1alpha1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"),
	} {
		if !scheme.Recognizes(gvk) {
			t.Errorf("scheme does not recognize %v", gvk)
		}
	}
	// InitializerConfiguration exists only in v1alpha1.
	if gvk := (schema.GroupVersionKind{Group: admissionregistration.GroupName, Version: "v1", Kind: "InitializerConfiguration"}); scheme.Recognizes(gvk) {
		t.Errorf("scheme recognizes %v", gvk)
	}
}

// TestRoundTrip decodes the 1.13 documentation's example to the internal version, as the
// server does (defaulting its matchPolicy to Equivalent), encodes it back and compares; then
// converts random objects both ways.
func TestRoundTrip(t *testing.T) {
	scheme := newScheme()
	codecs := serializer.NewCodecFactory(scheme)
	example := `{"apiVersion":"admissionregistration.k8s.io/v1alpha1","kind":"InitializerConfiguration","metadata":{"name":"example-config"},
		"initializers":[{"name":"podimage.example.com","rules":[{"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}]}`
	obj, _, err := codecs.UniversalDecoder(admissionregistration.SchemeGroupVersion).Decode([]byte(example), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	equivalent := admissionregistration.Equivalent
	want := []admissionregistration.Initializer{{Name: "podimage.example.com", Rules: []admissionregistration.Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}, MatchPolicy: &equivalent}}
	internal, ok := obj.(*admissionregistration.InitializerConfiguration)
	if !ok || !reflect.DeepEqual(internal.Initializers, want) {
		t.Fatalf("decoded %#v", obj)
	}
	data, err := runtime.Encode(codecs.LegacyCodec(admissionregistrationv1alpha1.SchemeGroupVersion), internal)
	if err != nil {
		t.Fatal(err)
	}
	back := &admissionregistrationv1alpha1.InitializerConfiguration{}
	if err := runtime.DecodeInto(codecs.UniversalDeserializer(), data, back); err != nil {
		t.Fatal(err)
	}
	if back.APIVersion != "admissionregistration.k8s.io/v1alpha1" || back.Kind != "InitializerConfiguration" || len(back.Initializers) != 1 {
		t.Errorf("encoded %s", data)
	}

	filler := randfill.NewWithSeed(rand.Int63()).NilChance(0.3).NumElements(0, 3).Funcs(
		func(*metav1.TypeMeta, randfill.Continue) {},
	)
	for range 200 {
		in := &admissionregistrationv1alpha1.InitializerConfigurationList{}
		filler.Fill(in)
		mid := &admissionregistration.InitializerConfigurationList{}
		if err := scheme.Convert(in, mid, nil); err != nil {
			t.Fatal(err)
		}
		out := &admissionregistrationv1alpha1.InitializerConfigurationList{}
		if err := scheme.Convert(mid, out, nil); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(in, out) {
			t.Fatalf("round trip changed the list:\n%s", cmp.Diff(in, out))
		}
	}
}
