package app

import (
	"context"
	"fmt"
	"net/http"
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	upstreamapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
)

// run starts the server and serves until ctx ends. It is upstream's app.Run, composed here
// from the same exported steps (NewConfig, Complete, CreateServerChain, PrepareRun, Run) so
// that the distribution can add to the server between them: the APIs of ours in upstream
// groups that are to be served and the keeper of their APIServices (nativeapis.go), the
// readiness checks of the plugins of ours that are enabled, and the loopback configuration
// of those that call the server as their requester. With nothing of ours enabled, it builds exactly
// stock's server.
// TestRunComposesUpstreamRun fails when upstream's Run changes, so a Kubernetes bump reviews
// this file.
func run(ctx context.Context, opts options.CompletedOptions, portcullis *portcullisconfig.Configuration, readiness *portcullisadmission.ReadinessChecks, loopback *portcullisadmission.LoopbackClientConfigs, enforcementModes *enforcement.Decorator, admissionTrace *trace.Decorator, harvest *webhook.HarvestPoint) error {
	klog.Infof("Version: %+v", version.Get())
	klog.InfoS("Golang settings", "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", os.Getenv("GOMAXPROCS"), "GOTRACEBACK", os.Getenv("GOTRACEBACK"))

	if err := nameInformers(&opts); err != nil {
		return err
	}

	config, err := upstreamapp.NewConfig(opts)
	if err != nil {
		return err
	}
	// The admission chain is built now: a plugin given an enforcement mode that has no
	// validating phase is known only here.
	if err := enforcementModes.Err(); err != nil {
		return err
	}
	// The plugins that call the server as their requester get its loopback configuration
	// now that the chain is built, before anything is served.
	if err := loopback.Set(config.KubeAPIs.ControlPlane.Generic.LoopbackClientConfig); err != nil {
		return fmt.Errorf("giving Portcullis admission plugins the loopback client configuration: %w", err)
	}
	// Who may trace is the server's authorizer's to say; it exists only now.
	admissionTrace.SetAuthorizer(config.KubeAPIs.ControlPlane.Generic.Authorization.Authorizer)
	if harvest != nil {
		// The harvest point's per-request state.
		wrapRequests(config, webhook.WithDeferredShadows)
	}
	if admissionTrace != nil {
		wrapRequests(config, trace.WithRequestHandler)
	}
	restore := func() {}
	resources := config.KubeAPIs.ControlPlane.Extra.APIResourceConfigSource
	for _, gv := range runtimeConfigNamesOurs(resources) {
		klog.Warning(portcullisconfig.RuntimeConfigDeprecation(gv))
	}
	apis := servedNativeAPIs(opts.Admission, portcullis, resources)
	if len(apis) > 0 {
		if restore, err = serveNativeAPIs(config, apis); err != nil {
			return err
		}
	}
	completed, err := config.Complete()
	if err != nil {
		restore()
		return err
	}
	server, err := upstreamapp.CreateServerChain(completed)
	// The storage providers are read while the chain is built; the hook is no longer needed.
	restore()
	if err != nil {
		return err
	}
	if len(apis) > 0 {
		if err := keepAPIServices(server, apis); err != nil {
			return fmt.Errorf("keeping the APIServices of the APIs of Portcullis: %w", err)
		}
	}
	// The aggregator is the outermost server: its /readyz is the one clients see.
	if checks := readiness.Checks(); len(checks) > 0 {
		if err := server.GenericAPIServer.AddReadyzChecks(checks...); err != nil {
			return fmt.Errorf("adding the readiness checks of Portcullis admission plugins: %w", err)
		}
	}

	prepared, err := server.PrepareRun()
	if err != nil {
		return err
	}
	return prepared.Run(ctx)
}

// wrapRequests puts wrap innermost in each server's handler chain (inside upstream's warning
// recorder), to give every request served a state of its own (the admission trace's, the
// harvest point's): it is the request's, whatever admission records upstream makes for it.
// Only the outermost server's chain runs for a request; each gets the filter so that the
// choice of outermost is upstream's.
func wrapRequests(config *upstreamapp.Config, wrap func(http.Handler) http.Handler) {
	for _, generic := range []*genericapiserver.Config{
		config.KubeAPIs.ControlPlane.Generic,
		&config.ApiExtensions.GenericConfig.Config,
		&config.Aggregator.GenericConfig.Config,
	} {
		build := generic.BuildHandlerChainFunc
		generic.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
			return build(wrap(apiHandler), c)
		}
	}
}
