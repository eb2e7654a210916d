package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	ouropenapi "github.com/portcullis-k8s/portcullis/pkg/generated/openapi"
	admissionregistrationrest "github.com/portcullis-k8s/portcullis/pkg/registry/admissionregistration/rest"
	policyrest "github.com/portcullis-k8s/portcullis/pkg/registry/policy/rest"
	"github.com/portcullis-k8s/portcullis/pkg/registry/upstreamgroup"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initializers"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podsecuritypolicy"
)

// nativeAPI is an API of ours served inside an upstream group.
type nativeAPI struct {
	// groupVersion is ours, as the Portcullis entry's servedAPIs names it.
	groupVersion schema.GroupVersion
	// plugin is the admission plugin of ours that reads the API: enabling it serves the API.
	plugin   string
	addition upstreamgroup.Addition
	// priority is the version's APIService priority, as upstream's aggregator registers it
	// (kube-apiserver's apiVersionPriorities, unexported): TestHAMixes compares the
	// APIService the keeper recreates with the one upstream's aggregator created.
	priority upstreamgroup.APIServicePriority
}

// nativeAPIs are the APIs of ours served in upstream groups; portcullisapi.ServableAPIs
// names the same versions, in the same order (TestNativeAPIsAreTheServableAPIs).
func nativeAPIs() []nativeAPI {
	return []nativeAPI{
		{groupVersion: policyv1beta1.SchemeGroupVersion, plugin: podsecuritypolicy.PluginName, addition: policyrest.Addition(),
			priority: upstreamgroup.APIServicePriority{Group: 17100, Version: 9}},
		{groupVersion: admissionregistrationv1alpha1.SchemeGroupVersion, plugin: initializers.PluginName, addition: admissionregistrationrest.Addition(),
			priority: upstreamgroup.APIServicePriority{Group: 16700, Version: 9}},
	}
}

// servedNativeAPIs returns the APIs of ours the server is to serve: those whose plugin is
// enabled, those the Portcullis entry's servedAPIs names (so that their objects can be
// written before the plugin is turned on), and policy/v1beta1 when --runtime-config names
// it. "api/all=true" alone serves none: it enables what stock serves.
func servedNativeAPIs(admission *kubeoptions.AdmissionOptions, portcullis *portcullisconfig.Configuration, resources serverstorage.APIResourceConfigSource) []nativeAPI {
	var served []nativeAPI
	for _, api := range nativeAPIs() {
		if pluginEnabled(admission, api.plugin) || portcullis.Serves(api.groupVersion) ||
			portcullisconfig.RuntimeConfigServes(resources, api.groupVersion) {
			served = append(served, api)
		}
	}
	return served
}

// runtimeConfigNamesOurs returns the versions that --runtime-config serves as ours, the form
// of earlier releases.
func runtimeConfigNamesOurs(resources serverstorage.APIResourceConfigSource) []schema.GroupVersion {
	var named []schema.GroupVersion
	for _, api := range nativeAPIs() {
		if portcullisconfig.RuntimeConfigServes(resources, api.groupVersion) {
			named = append(named, api.groupVersion)
		}
	}
	return named
}

// pluginEnabled reports whether the admission flags enable a plugin that is off by default.
func pluginEnabled(opts *kubeoptions.AdmissionOptions, name string) bool {
	generic := opts.GenericAdmission
	enabled := slices.Contains(generic.EnablePlugins, name) || slices.Contains(opts.PluginNames, name)
	return enabled && !slices.Contains(generic.DisablePlugins, name)
}

// serveNativeAPIs changes config, between upstream's NewConfig and Complete, so that the
// server it builds serves apis beside upstream's resources of their groups:
//   - upstream's provider of each such group is shown a resource configuration where none
//     of the group's upstream resources is enabled, so it serves nothing, and the
//     Addition's provider, added through upstream's hook for extra providers, serves the
//     group: upstream's versions from upstream's provider with the real configuration, plus
//     ours;
//   - our resources are stored as JSON (they have no protobuf encoding);
//   - their OpenAPI definitions join upstream's, for v2 and v3.
//
// The hook is process-wide: call restore once the server chain is built.
func serveNativeAPIs(config *upstreamapp.Config, apis []nativeAPI) (restore func(), err error) {
	extra := &config.KubeAPIs.ControlPlane.Extra
	storageFactory, ok := extra.StorageFactory.(*serverstorage.DefaultStorageFactory)
	if !ok {
		return nil, fmt.Errorf("serving the APIs of Portcullis: the storage factory is a %T, not upstream's default", extra.StorageFactory)
	}
	additions := make([]upstreamgroup.Addition, len(apis))
	for i, api := range apis {
		if err := api.addition.Validate(); err != nil {
			return nil, fmt.Errorf("serving %s: %w", api.groupVersion, err)
		}
		additions[i] = api.addition
		for _, r := range api.addition.Resources {
			storageFactory.SetSerializer(r.GroupResource(), runtime.ContentTypeJSON, nil)
		}
	}

	resources := extra.APIResourceConfigSource
	extra.APIResourceConfigSource = upstreamgroup.HideUpstream(resources, additions...)

	generic := config.KubeAPIs.ControlPlane.Generic
	generic.OpenAPIConfig.GetDefinitions = withOurDefinitions(generic.OpenAPIConfig.GetDefinitions)
	v3 := generic.OpenAPIV3Config
	v3.GetDefinitions = withOurDefinitions(v3.GetDefinitions)
	// The v3 configuration also holds its definitions computed once (the server builds its
	// models from them): add ours there, referring to schemas as upstream's v3 config does.
	if v3.Definitions != nil {
		maps.Copy(v3.Definitions, ouropenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
			defName, _ := v3.GetDefinitionName(name)
			return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
		}))
	}

	authorizer := generic.Authorization.Authorizer
	previous := controlplane.AdditionalStorageProvidersForTests
	controlplane.AdditionalStorageProvidersForTests = func(client *kubernetes.Clientset) []controlplaneapiserver.RESTStorageProvider {
		var providers []controlplaneapiserver.RESTStorageProvider
		if previous != nil {
			providers = previous(client)
		}
		for _, a := range additions {
			providers = append(providers, a.Provider(resources, upstreamgroup.UpstreamInputs{Authorizer: authorizer, Client: client}))
		}
		return providers
	}
	return func() { controlplane.AdditionalStorageProvidersForTests = previous }, nil
}

// keepAPIServices recreates, while the server runs, the APIServices of apis whenever another
// server deletes them (upstreamgroup.APIServiceKeeper says when and why).
func keepAPIServices(server *aggregatorapiserver.APIAggregator, apis []nativeAPI) error {
	desired := make([]*apiregistrationv1.APIService, len(apis))
	for i, api := range apis {
		desired[i] = upstreamgroup.LocalAPIService(api.groupVersion, api.priority)
	}
	informer := server.APIRegistrationInformers.Apiregistration().V1().APIServices()
	// The keeper stops as soon as the server's shutdown begins, not when its listener closes
	// after --shutdown-delay-duration: a stock server that starts meanwhile (a surge rollout)
	// must find nothing of ours recreated.
	shutdown := make(chan struct{})
	if err := server.GenericAPIServer.AddPreShutdownHook(apiServiceKeeperHook, func() error {
		close(shutdown)
		return nil
	}); err != nil {
		return err
	}
	return server.GenericAPIServer.AddPostStartHook(apiServiceKeeperHook, func(hook genericapiserver.PostStartHookContext) error {
		client, err := apiregistrationclient.NewForConfig(hook.LoopbackClientConfig)
		if err != nil {
			return err
		}
		keeper, err := upstreamgroup.NewAPIServiceKeeper(client, informer, desired)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(hook)
		go func() {
			defer cancel()
			select {
			case <-shutdown:
			case <-ctx.Done():
			}
		}()
		go keeper.Run(ctx, apiServiceResync)
		return nil
	})
}

const apiServiceKeeperHook = "portcullis-apiservice-keeper"

// apiServiceResync is how often the keeper checks its APIServices besides on deletions.
const apiServiceResync = time.Minute

// withOurDefinitions adds the OpenAPI definitions of our API types to those of upstream.
func withOurDefinitions(upstream common.GetOpenAPIDefinitions) common.GetOpenAPIDefinitions {
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := upstream(ref)
		maps.Copy(defs, ouropenapi.GetOpenAPIDefinitions(ref))
		return defs
	}
}
