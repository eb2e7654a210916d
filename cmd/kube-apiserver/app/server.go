// Package app builds Portcullis's kube-apiserver command: stock kube-apiserver's options,
// flags, help and run loop, from upstream's exported packages, with this distribution's
// admission plugins installed before any flag is defined; run.go composes the server.
package app

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/preflight"
	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/serveroptions"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	"github.com/portcullis-k8s/portcullis/pkg/admission/trace"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/mutating"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/validating"
)

// The description stock kube-apiserver prints in --help; kept word for word so the
// drop-in's help reads the same.
const longDescription = `The Kubernetes API server validates and configures data
for the api objects which include pods, services, replicationcontrollers, and
others. The API Server services REST operations and provides the frontend to the
cluster's shared state through which all other components interact.` + "\n\n" + preflightHint

// preflightHint is the one paragraph of our --help that stock's lacks.
const preflightHint = `Portcullis: before swapping this binary in for stock kube-apiserver, run
"kube-apiserver preflight --help": it checks a node's command line, manifest or
systemd unit, and whether a rollback to stock would work.`

// NewAPIServerCommand returns the kube-apiserver command. The server runs until ctx ends;
// main passes the process's signal context, so the command itself touches no process-wide
// state and can be built and run more than once in a process.
func NewAPIServerCommand(ctx context.Context) (*cobra.Command, error) {
	s, settings, err := serveroptions.New()
	if err != nil {
		return nil, err
	}
	featureGate := s.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)

	cmd := &cobra.Command{
		Use:  "kube-apiserver",
		Long: longDescription,
		// An error is not a usage problem: print the error, not the whole usage.
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
				return err
			}
			// As stock: the server's loopback clients must not log the warnings they cause.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			// Logging first, so that the flags are printed with the final configuration.
			if err := logsapi.ValidateAndApply(s.Logs, featureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(cmd.Flags())

			// Our settings come from the admission config file's Portcullis entry; a bad entry,
			// or enforcement modes naming a plugin that cannot be relaxed, stops the start here,
			// before anything dials etcd. A mode of a plugin that is not enabled is ignored.
			portcullis, err := portcullisconfig.Load(s.Admission.GenericAdmission.ConfigFile)
			if err != nil {
				return err
			}
			for _, d := range portcullis.Deprecations {
				klog.Warning(d.Message)
			}
			klog.InfoS("Portcullis settings in force", portcullis.LogValues()...)
			settings.Set(portcullis)
			enforcementModes := enforcement.New(portcullis.EnforcementSource, portcullis.EnforcementModes)
			for _, warning := range enforcementModes.NotEnabled(portcullisadmission.EnabledPlugins(s.Admission)) {
				klog.Warning(warning)
			}
			// Our plugins' own entries too: upstream reads them only once etcd is dialled.
			if err := portcullisadmission.CheckConfigurations(s.Admission); err != nil {
				return err
			}
			// First among the decorators, so they see the plugins rather than upstream's
			// wrappers; readiness and the loopback configuration before enforcement, whose
			// wrappers hide the plugin's methods. The trace after them: a step's verdict is
			// the one the chain sees.
			readiness := &portcullisadmission.ReadinessChecks{}
			loopback := &portcullisadmission.LoopbackClientConfigs{}
			decorators := admission.Decorators{readiness, loopback, enforcementModes}
			var admissionTrace *trace.Decorator
			if t := portcullis.AdmissionTrace; t != nil {
				admissionTrace = trace.New(t.OnRequest, t.Audit)
			}
			if admissionTrace != nil {
				decorators = append(decorators, admissionTrace)
			}
			s.Admission.GenericAdmission.Decorators = append(decorators, s.Admission.GenericAdmission.Decorators...)
			var harvest *webhook.HarvestPoint
			enabled := portcullisadmission.EnabledPlugins(s.Admission)
			softens := func(validating bool, plugin string) bool {
				return webhook.Softens(portcullis.Dispatch(validating)) && slices.Contains(enabled, plugin)
			}
			if softens(webhook.MutatingPlugin, mutating.PluginName) || softens(webhook.ValidatingPlugin, validating.PluginName) {
				// Mutating shadows are harvested at the end of the chain, where an admission
				// run ends; last, so that the wait is no plugin's latency.
				harvest = &webhook.HarvestPoint{}
				s.Admission.GenericAdmission.Decorators = append(s.Admission.GenericAdmission.Decorators, harvest)
			}

			completed, err := s.Complete(ctx)
			if err != nil {
				return err
			}
			// Every flag problem is reported here, before the server dials etcd.
			if errs := completed.Validate(); len(errs) != 0 {
				return utilerrors.NewAggregate(errs)
			}
			featureGate.(featuregate.MutableFeatureGate).AddMetrics()
			s.GenericServerRunOptions.ComponentGlobalsRegistry.AddMetrics()
			return run(ctx, completed, portcullis, readiness, loopback, enforcementModes, admissionTrace, harvest)
		},
		Args: noPositionalArgs,
	}
	cmd.SetContext(ctx)

	namedFlagSets := serveroptions.NamedFlagSets(s, cmd.Name())
	for _, fs := range namedFlagSets.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	columns, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, namedFlagSets, columns)
	cmd.AddCommand(preflight.NewCommand())
	return cmd, nil
}

// noPositionalArgs rejects any non-empty positional argument, as stock does.
func noPositionalArgs(cmd *cobra.Command, args []string) error {
	for _, arg := range args {
		if arg != "" {
			return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
		}
	}
	return nil
}
