package app

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	upstreamadmissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	upstreampolicyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	admissionregistrationrest "k8s.io/kubernetes/pkg/registry/admissionregistration/rest"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/serveroptions"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/registry/upstreamgroup"
)

func TestServedNativeAPIs(t *testing.T) {
	psp := schema.GroupVersion{Group: "policy", Version: "v1beta1"}
	initializers := schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}
	for _, tc := range []struct {
		name          string
		enable        []string
		disable       []string
		runtimeConfig map[string]string
		servedAPIs    []schema.GroupVersion
		want          []schema.GroupVersion
	}{
		{name: "nothing of ours"},
		{name: "the PodSecurityPolicy plugin", enable: []string{"PodSecurityPolicy"}, want: []schema.GroupVersion{psp}},
		{name: "the resource by runtime-config", runtimeConfig: map[string]string{"policy/v1beta1/podsecuritypolicies": "true"}, want: []schema.GroupVersion{psp}},
		{name: "the version by runtime-config", runtimeConfig: map[string]string{"policy/v1beta1": "true"}, want: []schema.GroupVersion{psp}},
		{name: "api/all=true alone serves what stock serves", runtimeConfig: map[string]string{"api/all": "true"}},
		{name: "the Portcullis entry's servedAPIs", servedAPIs: []schema.GroupVersion{psp}, want: []schema.GroupVersion{psp}},
		{name: "InitializerConfiguration by servedAPIs", servedAPIs: []schema.GroupVersion{initializers}, want: []schema.GroupVersion{initializers}},
		{name: "the Initializers plugin", enable: []string{"Initializers"}, want: []schema.GroupVersion{initializers}},
		{name: "the Initializers plugin enabled and disabled", enable: []string{"Initializers"}, disable: []string{"Initializers"}},
		{name: "both by servedAPIs", servedAPIs: []schema.GroupVersion{initializers, psp}, want: []schema.GroupVersion{psp, initializers}},
		// Stock's flag: it turns on upstream's alpha resources of the version, and nothing of ours.
		{name: "runtime-config naming upstream's admissionregistration.k8s.io/v1alpha1", runtimeConfig: map[string]string{"admissionregistration.k8s.io/v1alpha1": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := serveroptions.New()
			if err != nil {
				t.Fatal(err)
			}
			s.Admission.GenericAdmission.EnablePlugins = tc.enable
			s.Admission.GenericAdmission.DisablePlugins = tc.disable
			for k, v := range tc.runtimeConfig {
				s.APIEnablement.RuntimeConfig[k] = v
			}
			// As the server derives it from --runtime-config.
			resources, err := resourceconfig.MergeAPIResourceConfigs(controlplane.DefaultAPIResourceConfigSource(), s.APIEnablement.RuntimeConfig, legacyscheme.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			portcullis := &portcullisconfig.Configuration{}
			for _, gv := range tc.servedAPIs {
				portcullis.ServedAPIs = append(portcullis.ServedAPIs, gv.String())
			}
			var got []schema.GroupVersion
			for _, api := range servedNativeAPIs(s.Admission, portcullis, resources) {
				got = append(got, api.groupVersion)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNativeAPIsAreTheServableAPIs: the versions the Portcullis entry may name are the ones
// the command can serve.
func TestNativeAPIsAreTheServableAPIs(t *testing.T) {
	var served []schema.GroupVersion
	for _, api := range nativeAPIs() {
		served = append(served, api.groupVersion)
		for _, r := range api.addition.Resources {
			if r.GroupVersion() != api.groupVersion {
				t.Errorf("%v is served as a resource of %v", r.GroupVersionResource, api.groupVersion)
			}
		}
		if err := api.addition.Validate(); err != nil {
			t.Errorf("%v: %v", api.groupVersion, err)
		}
	}
	for _, r := range portcullisconfig.LegacyRuntimeConfigResources() {
		if !slices.ContainsFunc(nativeAPIs(), func(api nativeAPI) bool {
			return slices.ContainsFunc(api.addition.Resources, func(a upstreamgroup.Resource) bool { return a.GroupVersionResource == r })
		}) {
			t.Errorf("--runtime-config's form of earlier releases serves %v, which no native API serves", r)
		}
	}
	if want := portcullisapi.ServableAPIs(); !slices.Equal(served, want) {
		t.Errorf("nativeAPIs serve %v, the Portcullis entry may name %v", served, want)
	}
	var resources []schema.GroupVersionResource
	for _, api := range nativeAPIs() {
		for _, r := range api.addition.Resources {
			resources = append(resources, r.GroupVersionResource)
		}
	}
	if want := portcullisapi.ServableResources(); !slices.Equal(resources, want) {
		t.Errorf("nativeAPIs serve %v, portcullisapi.ServableResources names %v", resources, want)
	}
}

// TestStockRegistersServableVersions: stock's own scheme registers every version of ours, so a
// --runtime-config naming one (policy/v1beta1, the form of earlier releases) does not stop
// stock: preflight checks --runtime-config for the rollback with this binary's scheme, and
// the rollback test starts stock with it.
func TestStockRegistersServableVersions(t *testing.T) {
	stock := runtime.NewScheme()
	upstreampolicyinstall.Install(stock)
	upstreamadmissionregistrationinstall.Install(stock)
	for _, gv := range portcullisapi.ServableAPIs() {
		if !stock.IsVersionRegistered(gv) {
			t.Errorf("stock's scheme does not register %v", gv)
		}
	}
}

// TestServeNativeAPIsRestoresTheHook: upstream's hook for extra storage providers is
// process-wide; serveNativeAPIs sets it for the server's construction only, and each group
// it adds to is hidden from upstream's own provider, which ours replaces.
func TestServeNativeAPIsRestoresTheHook(t *testing.T) {
	if controlplane.AdditionalStorageProvidersForTests != nil {
		t.Fatal("the hook is set before the test")
	}
	resources := controlplane.DefaultAPIResourceConfigSource()
	namer := openapi.NewDefinitionNamer(legacyscheme.Scheme)
	config := &upstreamapp.Config{KubeAPIs: &controlplane.Config{ControlPlane: controlplaneapiserver.Config{
		Generic: &genericapiserver.Config{
			OpenAPIConfig:   genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer),
			OpenAPIV3Config: genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer),
		},
		Extra: controlplaneapiserver.Extra{
			APIResourceConfigSource: resources,
			StorageFactory: serverstorage.NewDefaultStorageFactory(storagebackend.Config{}, "application/vnd.kubernetes.protobuf",
				legacyscheme.Codecs, serverstorage.NewDefaultResourceEncodingConfig(legacyscheme.Scheme), resources, nil),
		},
	}}}

	restore, err := serveNativeAPIs(config, nativeAPIs())
	if err != nil {
		t.Fatal(err)
	}
	hook := controlplane.AdditionalStorageProvidersForTests
	restore()
	if controlplane.AdditionalStorageProvidersForTests != nil {
		t.Fatal("restore left the process-wide hook set")
	}
	if hook == nil {
		t.Fatal("serveNativeAPIs did not add a storage provider")
	}
	var groups []string
	for _, p := range hook(nil) {
		groups = append(groups, p.GroupName())
	}
	if want := []string{"policy", "admissionregistration.k8s.io"}; !slices.Equal(groups, want) {
		t.Fatalf("the hook adds providers of %v, want %v", groups, want)
	}
	// Upstream's providers of those groups, shown the server's configuration now, serve
	// nothing.
	hidden := config.KubeAPIs.ControlPlane.Extra.APIResourceConfigSource
	for _, upstream := range []controlplaneapiserver.RESTStorageProvider{policyrest.RESTStorageProvider{}, admissionregistrationrest.RESTStorageProvider{}} {
		info, err := upstream.NewRESTStorage(hidden, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.VersionedResourcesStorageMap) != 0 {
			t.Errorf("upstream's %s provider still serves %v", upstream.GroupName(), info.VersionedResourcesStorageMap)
		}
	}
	// Our definitions join upstream's in both OpenAPI configurations.
	nilRef := func(string) spec.Ref { return spec.Ref{} }
	for name, defs := range map[string]map[string]common.OpenAPIDefinition{
		"v2": config.KubeAPIs.ControlPlane.Generic.OpenAPIConfig.GetDefinitions(nilRef),
		"v3": config.KubeAPIs.ControlPlane.Generic.OpenAPIV3Config.Definitions,
	} {
		for _, def := range []string{"io.k8s.api.policy.v1beta1.PodSecurityPolicy", "io.k8s.api.admissionregistration.v1alpha1.InitializerConfiguration",
			"io.k8s.api.policy.v1.PodDisruptionBudget", "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicy"} {
			if _, ok := defs[def]; !ok {
				t.Errorf("OpenAPI %s lacks %s", name, def)
			}
		}
	}
}
