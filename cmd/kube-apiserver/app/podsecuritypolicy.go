package app

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
	pspopenapi "github.com/portcullis-k8s/portcullis/pkg/generated/openapi"
	policyrest "github.com/portcullis-k8s/portcullis/pkg/registry/policy/rest"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podsecuritypolicy"
)

func init() {
	// The server's scheme knows policy/v1beta1 PodSecurityPolicy from process start, as it
	// knows upstream's groups (k8s.io/kubernetes/pkg/apis/*/install do the same): so that
	// --runtime-config may name it and the storage can encode it. Knowing a version serves
	// nothing; servePodSecurityPolicy decides what is served.
	install.Install(legacyscheme.Scheme)
}

// servesPodSecurityPolicy reports whether the server serves policy/v1beta1
// podsecuritypolicies: when the PodSecurityPolicy plugin is enabled, or when the Portcullis
// entry's servedAPIs names policy/v1beta1, so that policies and grants can be written before
// enforcement is turned on — or when the runtime configuration names the resource or its
// version, the form of earlier releases (namesPodSecurityPolicy). "api/all=true" alone does
// not: it enables what stock serves, and stock serves no PodSecurityPolicy.
func servesPodSecurityPolicy(admission *kubeoptions.AdmissionOptions, portcullis *portcullisconfig.Configuration, resources serverstorage.APIResourceConfigSource) bool {
	return pluginEnabled(admission, podsecuritypolicy.PluginName) ||
		portcullis.Serves(policyrest.PodSecurityPolicies.GroupVersion()) ||
		namesPodSecurityPolicy(resources)
}

// namesPodSecurityPolicy reports whether --runtime-config names policy/v1beta1 or its
// podsecuritypolicies: how earlier releases served the API without the plugin. A stock
// kube-apiserver refuses to start with it.
func namesPodSecurityPolicy(resources serverstorage.APIResourceConfigSource) bool {
	return resources.ResourceExplicitlyEnabled(policyrest.PodSecurityPolicies) ||
		resources.VersionExplicitlyEnabled(policyrest.PodSecurityPolicies.GroupVersion())
}

// runtimeConfigDeprecation is the start-up warning for --runtime-config naming policy/v1beta1.
const runtimeConfigDeprecation = "--runtime-config names policy/v1beta1, which stops a stock kube-apiserver from starting " +
	"(\"group version policy/v1beta1 that has not been registered\"): list policy/v1beta1 in the admission config file's " +
	"Portcullis entry, servedAPIs, instead; the flag is read for this release only"

// pluginEnabled reports whether the admission flags enable a plugin that is off by default.
func pluginEnabled(opts *kubeoptions.AdmissionOptions, name string) bool {
	generic := opts.GenericAdmission
	enabled := slices.Contains(generic.EnablePlugins, name) || slices.Contains(opts.PluginNames, name)
	return enabled && !slices.Contains(generic.DisablePlugins, name)
}

// servePodSecurityPolicy changes config, between upstream's NewConfig and Complete, so that
// the server it builds serves policy/v1beta1 PodSecurityPolicy beside upstream's policy/v1:
//   - upstream's policy provider is shown a resource configuration where no policy resource
//     is enabled, so it serves nothing, and policyrest.StorageProvider, added through
//     upstream's hook for extra providers, serves the group: upstream's versions from
//     upstream's provider with the real configuration, plus PodSecurityPolicy;
//   - PodSecurityPolicy is stored as JSON (it has no protobuf encoding);
//   - its OpenAPI definitions join upstream's, for v2 and v3.
//
// The hook is process-wide: call restore once the server chain is built.
func servePodSecurityPolicy(config *upstreamapp.Config) (restore func(), err error) {
	extra := &config.KubeAPIs.ControlPlane.Extra
	storageFactory, ok := extra.StorageFactory.(*serverstorage.DefaultStorageFactory)
	if !ok {
		return nil, fmt.Errorf("serving PodSecurityPolicy: the storage factory is a %T, not upstream's default", extra.StorageFactory)
	}
	storageFactory.SetSerializer(policy.Resource("podsecuritypolicies"), runtime.ContentTypeJSON, nil)

	resources := extra.APIResourceConfigSource
	extra.APIResourceConfigSource = policyrest.WithoutUpstreamPolicy(resources)

	generic := config.KubeAPIs.ControlPlane.Generic
	generic.OpenAPIConfig.GetDefinitions = withPodSecurityPolicyDefinitions(generic.OpenAPIConfig.GetDefinitions)
	v3 := generic.OpenAPIV3Config
	v3.GetDefinitions = withPodSecurityPolicyDefinitions(v3.GetDefinitions)
	// The v3 configuration also holds its definitions computed once (the server builds its
	// models from them): add ours there, referring to schemas as upstream's v3 config does.
	if v3.Definitions != nil {
		maps.Copy(v3.Definitions, pspopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
			defName, _ := v3.GetDefinitionName(name)
			return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
		}))
	}

	previous := controlplane.AdditionalStorageProvidersForTests
	controlplane.AdditionalStorageProvidersForTests = func(client *kubernetes.Clientset) []controlplaneapiserver.RESTStorageProvider {
		var providers []controlplaneapiserver.RESTStorageProvider
		if previous != nil {
			providers = previous(client)
		}
		return append(providers, policyrest.StorageProvider{ResourceConfig: resources})
	}
	return func() { controlplane.AdditionalStorageProvidersForTests = previous }, nil
}

// withPodSecurityPolicyDefinitions adds PodSecurityPolicy's OpenAPI definitions to those of
// upstream.
func withPodSecurityPolicyDefinitions(upstream common.GetOpenAPIDefinitions) common.GetOpenAPIDefinitions {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := upstream(ref)
		maps.Copy(defs, pspopenapi.GetOpenAPIDefinitions(ref))
		return defs
	}
}
