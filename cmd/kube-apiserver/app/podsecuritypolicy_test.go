package app

import (
	"testing"

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
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	ourpolicyrest "github.com/portcullis-k8s/portcullis/pkg/registry/policy/rest"
)

func TestServesPodSecurityPolicy(t *testing.T) {
	for _, tc := range []struct {
		name          string
		enable        []string
		runtimeConfig map[string]string
		servedAPIs    []schema.GroupVersion
		want          bool
	}{
		{name: "nothing of ours", want: false},
		{name: "the plugin", enable: []string{"PodSecurityPolicy"}, want: true},
		{name: "the resource by runtime-config", runtimeConfig: map[string]string{"policy/v1beta1/podsecuritypolicies": "true"}, want: true},
		{name: "the version by runtime-config", runtimeConfig: map[string]string{"policy/v1beta1": "true"}, want: true},
		{name: "api/all=true alone serves what stock serves", runtimeConfig: map[string]string{"api/all": "true"}, want: false},
		{name: "the Portcullis entry's servedAPIs", servedAPIs: []schema.GroupVersion{{Group: "policy", Version: "v1beta1"}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := NewServerRunOptions()
			if err != nil {
				t.Fatal(err)
			}
			s.Admission.GenericAdmission.EnablePlugins = tc.enable
			for k, v := range tc.runtimeConfig {
				s.APIEnablement.RuntimeConfig[k] = v
			}
			// As the server derives it from --runtime-config.
			resources, err := resourceconfig.MergeAPIResourceConfigs(controlplane.DefaultAPIResourceConfigSource(), s.APIEnablement.RuntimeConfig, legacyscheme.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			portcullis := &portcullisconfig.Configuration{ServedAPIs: tc.servedAPIs}
			if got := servesPodSecurityPolicy(s.Admission, portcullis, resources); got != tc.want {
				t.Errorf("servesPodSecurityPolicy = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestServePodSecurityPolicyRestoresTheHook: upstream's hook for extra storage providers is
// process-wide; servePodSecurityPolicy sets it for the server's construction only, and the
// policy group is hidden from upstream's own provider, which ours replaces.
func TestServePodSecurityPolicyRestoresTheHook(t *testing.T) {
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

	restore, err := servePodSecurityPolicy(config)
	if err != nil {
		t.Fatal(err)
	}
	hook := controlplane.AdditionalStorageProvidersForTests
	restore()
	if controlplane.AdditionalStorageProvidersForTests != nil {
		t.Fatal("restore left the process-wide hook set")
	}
	if hook == nil {
		t.Fatal("servePodSecurityPolicy did not add a storage provider")
	}
	providers := hook(nil)
	if len(providers) != 1 || providers[0].GroupName() != "policy" {
		t.Fatalf("the hook adds %v, want one provider of the policy group", providers)
	}
	if _, ok := providers[0].(ourpolicyrest.StorageProvider); !ok {
		t.Errorf("the hook adds a %T", providers[0])
	}
	// Upstream's policy provider, shown the server's configuration now, serves nothing.
	info, err := policyrest.RESTStorageProvider{}.NewRESTStorage(config.KubeAPIs.ControlPlane.Extra.APIResourceConfigSource, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.VersionedResourcesStorageMap) != 0 {
		t.Errorf("upstream's policy provider still serves %v", info.VersionedResourcesStorageMap)
	}
	// Our definitions join upstream's in both OpenAPI configurations.
	nilRef := func(string) spec.Ref { return spec.Ref{} }
	for name, defs := range map[string]map[string]common.OpenAPIDefinition{
		"v2": config.KubeAPIs.ControlPlane.Generic.OpenAPIConfig.GetDefinitions(nilRef),
		"v3": config.KubeAPIs.ControlPlane.Generic.OpenAPIV3Config.Definitions,
	} {
		if _, ok := defs["io.k8s.api.policy.v1beta1.PodSecurityPolicy"]; !ok {
			t.Errorf("OpenAPI %s lacks PodSecurityPolicy", name)
		}
		if _, ok := defs["io.k8s.api.policy.v1.PodDisruptionBudget"]; !ok {
			t.Errorf("OpenAPI %s lost upstream's definitions", name)
		}
	}
}
