package preflight

import (
	"context"
	"crypto/tls"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace/noop"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	admissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/controlplane"
	kubeapiserveradmission "k8s.io/kubernetes/pkg/kubeapiserver/admission"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/serveroptions"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhookconfigurationguard"
)

const preflightLong = `Preflight checks, before you swap binaries, that this kube-apiserver accepts a node's
command line: it parses and validates the flags through the same options as the server
(without contacting etcd or writing any file), checks that every file they name is
readable and that certificates and keys parse and match, loads the admission
configuration and every plugin's configuration, and prints the admission chains that would
load and how they differ from stock kube-apiserver with the same flags.

It also answers whether a rollback would work: whether stock kube-apiserver of the same
Kubernetes release, given the same files and this command line less Portcullis's plugin
names, would start (upstream's own options, plugin registry and configuration loaders judge
it: the flags naming plugins, --runtime-config, every admission config entry stock reads).

Take the command line from one of:
  kube-apiserver preflight --manifest /etc/kubernetes/manifests/kube-apiserver.yaml
  kube-apiserver preflight --systemd-unit /etc/systemd/system/kube-apiserver.service [--environment-file FILE]
  kube-apiserver preflight -- --etcd-servers=... --tls-cert-file=... ...

With --systemd-unit it also checks the unit's sandbox (ProtectSystem=, ProtectHome=,
PrivateTmp=, ReadWritePaths=, ...) against the files the server reads and writes; with
--running-unit FILE [--running-environment-file FILE] (the unit the node runs now, or its
backup), every flag that unit passes must keep its value in the new one, as for manifests.
When the flags name Portcullis's plugins, the program the unit runs must be this binary
(stock refuses the names); a secure port below 1024 needs CAP_NET_BIND_SERVICE.

For a manifest rendered by kubeadm before it replaces the running one, --running-manifest
names the running one: every flag it sets must keep its value (a changed --advertise-address
or --admission-control-config-file is a problem); a flag may be added only at the server's
default, our plugin names and admission config file apart (a plugin of ours dropped is
turned off, named in a warning; with --rollback, dropping our plugin names is expected and
the image must be stock's); the rest of the pod (env, resources, probes, securityContext, volumes, labels and
annotations) must not change, but for added read-only hostPath volumes. The manifest's image
must be able to run its flags: this release's (of --kubernetes-version, when given) when the
flags name Portcullis's plugins. --kubeadm-patches DIR checks that the kube-apiserver image the patches set is this
release's and runs the Kubernetes version kubeadm renders (--kubernetes-version, that of
kubeadm upgrade apply; default this release's): give it alone before an upgrade. An image
pinned by a digest alone names no release: give --image-release RELEASE (the release the
digest stands for), or it is a problem.

With --webhooks --kubeconfig FILE it also reads the cluster's webhook configurations (two
lists, nothing written) and reports what the WebhookConfigurationGuard plugin would find, at
the levels of the command line's admission configuration (Warn when it has none); a finding
at Deny level is a problem. --webhooks alone checks only the webhooks.

With --rollback --kubeconfig FILE it also reads the APIServices of the versions Portcullis
serves (policy/v1beta1, admissionregistration.k8s.io/v1alpha1) and asks the server that
answers what it serves in each. Run alone, once every API server runs stock, one that points
at nothing is a problem (it breaks legacy discovery for every client that reads it); beside a
manifest or unit, where a stock server of a half-done rollback answers the same, a warning.

With --podsecuritypolicy --kubeconfig FILE it reads the cluster's PodSecurityPolicies, pod
templates (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs) and pods
(lists and SubjectAccessReviews, nothing written) and judges each as the PodSecurityPolicy
plugin would once enabled: a template's new pods as created by its controller and service
account, an existing pod's next update. It lists what would be refused and why, and which
policy would admit the rest with which defaults; refusals are warnings, or problems when the
command line enables PodSecurityPolicy in enforcement mode Deny.

The verdict says whether the server starts (the problems), and, apart, what it refuses that
stock admits (the plugins of ours that enforce, and what each refuses) and which verdicts
change after a rollback to stock (softened plugins and webhooks enforce again).

-o json prints the report as one JSON object (docs/operating.md describes its fields).

Exit codes: 0 the swap is safe and a rollback would work; 1 the swap is not safe (every
problem listed); 2 preflight could not run (a bad invocation, or a file it was given cannot
be read); 3 the swap is safe but a rollback is blocked (every reason listed).`

// NewCommand returns the preflight subcommand of kube-apiserver.
func NewCommand() *cobra.Command {
	var manifest, runningManifest, unit, runningUnit, kubeconfig, patches, kubernetesVersion, imageRelease, output string
	var environmentFiles, runningEnvironmentFiles []string
	var webhooks, podSecurityPolicy, rollback bool
	cmd := &cobra.Command{
		Use:          "preflight",
		Short:        "Check that this binary accepts a node's kube-apiserver command line",
		Long:         preflightLong,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Until the report is made, a failure is preflight's, not the swap's.
			usage := func(err error) error {
				setExitCode(cmd.Context(), ExitUsage)
				return err
			}
			var (
				argv    []string
				pod     *nodeconfig.StaticPod
				service *nodeconfig.SystemdService
				source  string
				err     error
			)
			dash := cmd.ArgsLenAtDash()
			switch {
			case output != "text" && output != "json":
				return usage(fmt.Errorf("-o %s: want text or json", output))
			case manifest != "" && unit != "":
				return usage(errors.New("give --manifest or --systemd-unit, not both"))
			case len(environmentFiles) > 0 && unit == "":
				return usage(errors.New("--environment-file goes with --systemd-unit"))
			case runningManifest != "" && manifest == "":
				return usage(errors.New("--running-manifest goes with --manifest"))
			case rollback && runningManifest == "" && runningUnit == "" && kubeconfig == "":
				return usage(errors.New("--rollback goes with --running-manifest, --running-unit or --kubeconfig"))
			case runningUnit != "" && unit == "":
				return usage(errors.New("--running-unit goes with --systemd-unit"))
			case len(runningEnvironmentFiles) > 0 && runningUnit == "":
				return usage(errors.New("--running-environment-file goes with --running-unit"))
			case imageRelease != "" && patches == "" && manifest == "":
				return usage(errors.New("--image-release goes with --kubeadm-patches or --manifest"))
			case cmd.Flags().Changed("kubernetes-version") && kubernetesVersion == "":
				return usage(errors.New("--kubernetes-version is empty: give the version the cluster runs (v1.37.2); the command that was to print it printed nothing"))
			case kubernetesVersion != "" && !kubernetesVersionPattern.MatchString(kubernetesVersion):
				return usage(fmt.Errorf("--kubernetes-version %s: want a Kubernetes version (v1.37.2)", kubernetesVersion))
			case imageRelease != "" && !validImageRelease(imageRelease):
				return usage(fmt.Errorf("--image-release %s: want a Portcullis release (v1.37.2+portcullis.1) or a Kubernetes version (v1.37.2)", imageRelease))
			case kubernetesVersion != "" && patches == "" && manifest == "" && !(rollback && unit != ""):
				return usage(errors.New("--kubernetes-version goes with --kubeadm-patches, --manifest, or --rollback --systemd-unit"))
			case (webhooks || podSecurityPolicy) && kubeconfig == "":
				return usage(errors.New("--webhooks and --podsecuritypolicy need --kubeconfig"))
			case kubeconfig != "" && !webhooks && !podSecurityPolicy && !rollback:
				return usage(errors.New("--kubeconfig goes with --webhooks, --podsecuritypolicy or --rollback"))
			case (manifest != "" || unit != "") && len(args) > 0:
				return usage(fmt.Errorf("flags after -- are not taken with --manifest or --systemd-unit: %q", args))
			case manifest != "":
				source = "static pod manifest " + manifest
				if pod, err = nodeconfig.ReadStaticPod(manifest); err != nil {
					return usage(fmt.Errorf("--manifest: %w", err))
				}
				argv = pod.Args
			case unit != "":
				source = "systemd unit " + unit
				if service, err = nodeconfig.ReadSystemdUnit(unit, environmentFiles...); err != nil {
					return usage(fmt.Errorf("--systemd-unit: %w", err))
				}
				argv = service.Args
			case dash == 0:
				source = "the command line after --"
				argv = args
			case webhooks || podSecurityPolicy || patches != "" || (rollback && kubeconfig != ""):
				// The cluster's webhooks, pods or APIServices, or the kubeadm patches, alone.
			default:
				return usage(errors.New("give --manifest FILE, --systemd-unit FILE, --kubeadm-patches DIR, or the server's flags after --"))
			}
			var running *nodeconfig.StaticPod
			if runningManifest != "" {
				if running, err = nodeconfig.ReadStaticPod(runningManifest); err != nil {
					return usage(fmt.Errorf("--running-manifest: %w", err))
				}
			}
			var runningService *nodeconfig.SystemdService
			if runningUnit != "" {
				if runningService, err = nodeconfig.ReadSystemdUnitCopy(runningUnit, runningEnvironmentFiles...); err != nil {
					return usage(fmt.Errorf("--running-unit: %w", err))
				}
			}
			// The plugins this builds log as the server would; the report says it all.
			klog.SetLogger(logr.Discard())
			klog.SetOutput(io.Discard)
			klog.LogToStderr(false)
			report := &PreflightReport{}
			if source != "" {
				report = Preflight(cmd.Context(), argv)
				report.rollback = rollback
				report.digestRelease = imageRelease
				if pod != nil {
					report.checkHostPathMounts(pod.HostPathMounts)
					runningImage := ""
					if running != nil {
						runningImage = running.Image
					}
					report.checkManifestImage(manifest, pod.Image, kubernetesVersion, runningImage, version.Get().GitVersion)
				}
				if service != nil {
					report.checkSandbox(service)
					report.checkUnitProgram(unit, service)
					if rollback {
						report.checkRollbackProgram(service, runningService, kubernetesVersion, version.Get().GitVersion)
					} else if runningService != nil {
						report.checkUnitNotOlder(runningUnit, service, runningService)
					}
				}
				if running != nil {
					report.checkAgainstRunning(runningManifest, running.Args)
					report.comparePodSpecs(runningManifest, running, pod)
				}
				if runningService != nil {
					report.checkAgainstRunningUnit(runningUnit, runningService.Args)
					report.compareUnits(runningUnit, runningService, service)
				}
			}
			report.Source = source
			report.digestRelease = imageRelease
			if patches != "" {
				report.checkKubeadmPatches(patches, kubernetesVersion, version.Get().GitVersion)
			}
			if webhooks {
				findings, summary, err := webhookFindings(cmd.Context(), kubeconfig, report.AdmissionConfigFile)
				if err != nil {
					return usage(err)
				}
				report.addWebhookFindings(summary, findings)
			}
			if podSecurityPolicy {
				found, err := podSecurityPolicyFindings(cmd.Context(), kubeconfig)
				if err != nil {
					return usage(err)
				}
				report.addPodSecurityPolicyReport(found)
			}
			// The cluster's APIServices alone: the check once every API server runs stock.
			apiServicesAlone := rollback && kubeconfig != "" && source == "" && patches == "" && !webhooks && !podSecurityPolicy
			if rollback && kubeconfig != "" {
				states, err := apiServiceStates(cmd.Context(), kubeconfig)
				if err != nil {
					return usage(err)
				}
				report.addAPIServiceStates(states, apiServicesAlone)
			}
			report.judge()
			report.decide()
			if output == "json" {
				if err := report.PrintJSON(cmd.OutOrStdout()); err != nil {
					return usage(err)
				}
			} else {
				report.Print(cmd.OutOrStdout())
			}
			switch {
			case report.ExitCode == ExitUnsafe && apiServicesAlone:
				// A check after the swaps, not before one.
				return fmt.Errorf("preflight found %d problem(s)", len(report.Problems))
			case report.ExitCode == ExitUnsafe:
				return fmt.Errorf("preflight found %d problem(s): the swap is not safe", len(report.Problems))
			case report.ExitCode == ExitRollbackBlocked:
				setExitCode(cmd.Context(), ExitRollbackBlocked)
				return fmt.Errorf("preflight found %d reason(s) a rollback to stock would fail", len(report.RollbackBlockers))
			}
			return nil
		},
	}
	// The root command's help function prints the server's flags; this command has its own.
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\nUsage:\n  %s [flags] [-- SERVER-FLAGS...]\n\nFlags:\n%s", c.Long, c.CommandPath(), c.LocalFlags().FlagUsages())
	})
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		fmt.Fprintf(c.OutOrStderr(), "Usage:\n  %s [flags] [-- SERVER-FLAGS...]\n\nFlags:\n%s", c.CommandPath(), c.LocalFlags().FlagUsages())
		return nil
	})
	// A flag preflight does not know is a bad invocation too.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		setExitCode(c.Context(), ExitUsage)
		return err
	})
	cmd.Flags().StringVar(&manifest, "manifest", "", "a static pod manifest whose kube-apiserver container's command line to check")
	cmd.Flags().StringVar(&runningManifest, "running-manifest", "", "with --manifest: the manifest the node runs now, whose flags and pod settings the new one must keep")
	cmd.Flags().StringVar(&unit, "systemd-unit", "", "a systemd unit whose ExecStart (and sandbox) to check")
	cmd.Flags().BoolVar(&rollback, "rollback", false, "with --running-manifest or --running-unit: the new command line is a rollback to stock, which drops Portcullis's plugin names and must run stock's image (or binary, of the running Kubernetes version); with --kubeconfig: also check the cluster's APIServices of Portcullis's versions (alone: once every API server runs stock)")
	cmd.Flags().StringVar(&runningUnit, "running-unit", "", "with --systemd-unit: the unit the node runs now (its backup), whose flags the new one must keep")
	cmd.Flags().StringArrayVar(&runningEnvironmentFiles, "running-environment-file", nil, "with --running-unit: an EnvironmentFile to expand its ExecStart with, in place of the unit's own (repeat it for several, in the unit's order)")
	cmd.Flags().StringArrayVar(&environmentFiles, "environment-file", nil, "with --systemd-unit: an EnvironmentFile to expand ExecStart with, in place of the unit's own (repeat it for several, in the unit's order)")
	cmd.Flags().StringVar(&patches, "kubeadm-patches", "", "a kubeadm --patches directory whose kube-apiserver image to check against this release and --kubernetes-version")
	cmd.Flags().StringVar(&kubernetesVersion, "kubernetes-version", "", "with --kubeadm-patches or --manifest: the Kubernetes version kubeadm renders (kubeadm upgrade apply's); with --rollback --systemd-unit: the version of stock kube-apiserver the unit must run; default this release's")
	cmd.Flags().StringVar(&imageRelease, "image-release", "", "with --manifest or --kubeadm-patches: the release an image pinned by a digest alone runs (v1.37.2+portcullis.1, or v1.37.2 for stock's image); without it such an image is a problem")
	cmd.Flags().BoolVar(&webhooks, "webhooks", false, "also check the cluster's webhook configurations against the admission webhook good practices (needs --kubeconfig)")
	cmd.Flags().BoolVar(&podSecurityPolicy, "podsecuritypolicy", false, "also judge the cluster's pod templates and pods as PodSecurityPolicy would once enabled (needs --kubeconfig)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "with --webhooks, --podsecuritypolicy or --rollback: the kubeconfig to read the cluster through (reads and access reviews; nothing is written)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "the report's format: text or json")
	return cmd
}

// PreflightReport is what Preflight found. -o json prints it as it is: the field names are
// part of preflight's interface.
type PreflightReport struct {
	// Version is this binary's version.
	Version string `json:"version"`
	// Source says where the command line was read.
	Source string `json:"source,omitempty"`
	// Verdict sums the report up: "safe", "unsafe" or "rollback-blocked"; ExitCode is the
	// exit code that goes with it.
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exitCode"`
	// Args is the command line checked.
	Args []string `json:"args,omitempty"`
	// AdmissionConfigFile is the command line's --admission-control-config-file, if any.
	AdmissionConfigFile string `json:"admissionConfigFile,omitempty"`
	// Problems lists, each naming its flag, file or field, why the swap is not safe.
	Problems []string `json:"problems"`
	// Warnings are what the operator must have done before the swap for it to be safe, which
	// preflight cannot see from the command line: a plugin of ours that needs setup first.
	Warnings []string `json:"warnings"`
	// Notes are facts worth knowing that are not problems.
	Notes []string `json:"notes"`
	// RollbackBlockers lists why stock kube-apiserver would not start with the same files
	// and this command line less our plugin names: a rollback would fail.
	RollbackBlockers []string `json:"rollbackBlockers"`
	// RollbackEdits are the edits of the command line a rollback takes: our plugin names out
	// of the admission flags.
	RollbackEdits []string `json:"rollbackEdits"`
	// Mutating and Validating are the admission chains that would load, in order.
	Mutating   []string `json:"mutatingChain,omitempty"`
	Validating []string `json:"validatingChain,omitempty"`
	// StockMutating and StockValidating are stock kube-apiserver's chains for the same
	// flags without our plugins; nil when they could not be computed.
	StockMutating   []string `json:"stockMutatingChain,omitempty"`
	StockValidating []string `json:"stockValidatingChain,omitempty"`
	// WebhookSummary and WebhookFindings are what --webhooks found.
	WebhookSummary  string                              `json:"webhookSummary,omitempty"`
	WebhookFindings []webhookconfigurationguard.Finding `json:"webhookFindings,omitempty"`
	// PodSecurityPolicy is what --podsecuritypolicy found.
	PodSecurityPolicy *PodSecurityPolicyReport `json:"podSecurityPolicy,omitempty"`

	// Refusals are what the new server refuses that stock admits: the plugins of ours that
	// enforce (mode Deny) and what each refuses. They keep the swap safe (it starts), but
	// must be meant.
	Refusals []string `json:"refusals"`
	// RollbackChanges are the verdicts that change when stock runs instead: our plugins
	// stop, softened plugins and webhooks enforce again, breakers and budget stop.
	RollbackChanges []string `json:"rollbackChanges"`
	// Starts says whether the server starts with the command line: no problem found.
	Starts bool `json:"starts"`

	// rollback says the command line checked is a rollback to stock (--rollback): it drops
	// our plugin names from the running one's, and runs stock's image.
	rollback bool
	// portcullis is the Portcullis entry's settings, once read.
	portcullis *portcullisconfig.Configuration
	// namedFiles are the files the flags name, by flag, for the static pod's mounts and the
	// unit's sandbox; writtenPaths those the server writes.
	namedFiles, writtenPaths [][2]string
	// checkedCommandLine is whether a command line was checked (not only patches or webhooks).
	checkedCommandLine bool
	// digestRelease is the release an image pinned by a digest alone stands for
	// (--image-release): its digest cannot say.
	digestRelease string
}

// decide sets the verdict and exit code from what the report holds.
func (r *PreflightReport) decide() {
	r.Version = version.Get().GitVersion
	r.Starts = len(r.Problems) == 0
	switch {
	case len(r.Problems) > 0:
		r.Verdict, r.ExitCode = "unsafe", ExitUnsafe
	case len(r.RollbackBlockers) > 0:
		r.Verdict, r.ExitCode = "rollback-blocked", ExitRollbackBlocked
	default:
		r.Verdict, r.ExitCode = "safe", 0
	}
}

// addWebhookFindings adds what --webhooks found; a finding at Deny level is a problem.
func (r *PreflightReport) addWebhookFindings(summary string, findings []webhookconfigurationguard.Finding) {
	r.WebhookSummary, r.WebhookFindings = summary, findings
	for _, f := range findings {
		if f.Deny {
			r.problem("the WebhookConfigurationGuard would refuse this configuration (a check at Deny level): %s", f.Message)
		}
	}
}

// addPodSecurityPolicyReport adds what --podsecuritypolicy found; what would be refused is a
// warning: it is for the operator to settle before enabling the plugin in Deny mode.
func (r *PreflightReport) addPodSecurityPolicyReport(found *PodSecurityPolicyReport) {
	r.PodSecurityPolicy = found
	if n := found.Refused(); n > 0 && r.podSecurityPolicyEnforces() {
		r.problem("%d pod template(s) and pod(s) would be refused: PodSecurityPolicy is enabled and enforcing (listed above); grant a policy that admits them, or run the plugin in enforcement mode Warn or Audit first", n)
	} else if n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d pod template(s) and pod(s) would be refused once PodSecurityPolicy enforces (listed above): grant a policy that admits them, or run the plugin in enforcement mode Warn or Audit first", n))
	}
	for _, name := range slices.Sorted(maps.Keys(found.UnusablePolicies)) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("PodSecurityPolicy %s admits nothing: %s", name, found.UnusablePolicies[name]))
	}
}

// PrintJSON writes the report as one JSON object.
func (r *PreflightReport) PrintJSON(w io.Writer) error {
	for _, list := range []*[]string{&r.Problems, &r.Warnings, &r.Notes, &r.RollbackBlockers, &r.RollbackEdits, &r.Refusals, &r.RollbackChanges} {
		if *list == nil {
			*list = []string{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *PreflightReport) problem(format string, a ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

// reported tells whether a problem already says text.
func (r *PreflightReport) reported(text string) bool {
	return slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, text) })
}

// imageReleasePattern is what --image-release takes: a Kubernetes version, with a Portcullis
// release's suffix or without (stock's).
var imageReleasePattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+portcullis\.[0-9]+)?$`)

func validImageRelease(release string) bool { return imageReleasePattern.MatchString(release) }

// kubernetesVersionPattern is what --kubernetes-version takes, as kubeadm writes versions.
var kubernetesVersionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Preflight checks a kube-apiserver command line (without the program name).
func Preflight(ctx context.Context, args []string) *PreflightReport {
	r := &PreflightReport{Args: args, checkedCommandLine: true}
	s, settings, err := serveroptions.New()
	if err != nil {
		r.problem("%v", err)
		return r
	}
	fs, err := parseServerFlags(s, args)
	if err != nil {
		r.problem("command line: %v", err)
		return r
	}
	checkRepeatedFlags(r, args)
	for _, name := range fileFlags {
		for _, path := range flagValues(fs, name) {
			r.namedFiles = append(r.namedFiles, [2]string{name, path})
		}
	}
	r.AdmissionConfigFile = s.Admission.GenericAdmission.ConfigFile
	featureGate := s.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		r.problem("--feature-gates/--emulated-version: %v", err)
		return r
	}
	for _, e := range logsapi.Validate(s.Logs, featureGate, nil) {
		r.problem("logging flags: %v", e)
	}
	checkFiles(r, fs)
	checkCertificates(r, fs)
	checkSNICertKeys(r, s)
	checkConfigFiles(ctx, r, s, fs)
	if checkAdmissionConfigFiles(r, s) {
		// The server would exit building its admission chain (upstream exits the process
		// on an unreadable plugin configuration file): nothing further can be judged.
		return r
	}
	checkWritableDirectories(r, s)

	// Without --tls-cert-file the server writes a self-signed certificate into --cert-dir;
	// preflight writes nothing, so it makes one in memory instead.
	if s.SecureServing.ServerCert.CertKey.CertFile == "" {
		r.Notes = append(r.Notes, fmt.Sprintf("no --tls-cert-file: the server will generate a self-signed serving certificate in %s", s.SecureServing.ServerCert.CertDirectory))
		s.SecureServing.ServerCert.CertDirectory = ""
	}
	// Completing the options dials the external token signer; preflight contacts nothing,
	// so it completes without it and validates with a stand-in.
	signingEndpoint := s.ServiceAccountSigningEndpoint
	s.ServiceAccountSigningEndpoint = ""
	completed, err := s.Complete(ctx)
	if err != nil {
		r.problem("options: %v", err)
		return r
	}
	if signingEndpoint != "" {
		r.Notes = append(r.Notes, fmt.Sprintf("--service-account-signing-endpoint %s: preflight does not contact the external signer; the server does at start-up and fails if it is not serving", signingEndpoint))
		completed.ServiceAccountSigningEndpoint = signingEndpoint
		if completed.ServiceAccountIssuer == nil {
			completed.ServiceAccountIssuer = externalSignerNotContacted{}
			completed.Authentication.ServiceAccounts.ExternalPublicKeysGetter = externalSignerNotContacted{}
		}
	}
	for _, e := range completed.Validate() {
		// Some configuration files are loaded again by validation; they were reported
		// above, with their flag.
		if !r.reported(e.Error()) {
			r.problem("%v", e)
		}
	}

	loopback := loopbackHost(s)
	checkRollback(r, args, loopback)
	if resources, err := resourceconfig.MergeAPIResourceConfigs(controlplane.DefaultAPIResourceConfigSource(), completed.APIEnablement.RuntimeConfig, legacyscheme.Scheme); err != nil {
		r.problem("--runtime-config: %v", err)
	} else {
		// What the server warns of at start-up, from the same merged configuration.
		for _, gv := range portcullisapi.ServableAPIs() {
			if portcullisconfig.RuntimeConfigServes(resources, gv) {
				r.Warnings = append(r.Warnings, portcullisconfig.RuntimeConfigDeprecation(gv))
			}
		}
	}
	portcullis, err := portcullisconfig.Load(completed.Admission.GenericAdmission.ConfigFile)
	if err != nil {
		r.problem("%v", err)
		return r
	}
	settings.Set(portcullis)
	r.portcullis = portcullis
	for _, d := range portcullis.Deprecations {
		if d.BlocksRollback {
			r.RollbackBlockers = append(r.RollbackBlockers, d.Message)
		} else {
			r.Warnings = append(r.Warnings, d.Message)
		}
	}
	r.Warnings = append(r.Warnings, enforcement.New(portcullis.EnforcementSource, portcullis.EnforcementModes).NotEnabled(portcullisadmission.EnabledPlugins(completed.Admission))...)
	r.Mutating, r.Validating, err = admissionChains(completed.Admission, s.GenericServerRunOptions.ComponentGlobalsRegistry, loopback)
	if err != nil {
		if file := completed.Admission.GenericAdmission.ConfigFile; file != "" {
			r.problem("admission (--admission-control-config-file %s): %v", file, err)
		} else {
			r.problem("admission: %v", err)
		}
		return r
	}
	for _, p := range portcullisadmission.Plugins() {
		if p.Prerequisite != "" && (slices.Contains(r.Mutating, p.Name) || slices.Contains(r.Validating, p.Name)) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s is enabled: %s", p.Name, p.Prerequisite))
		}
	}
	checkAuditModeHasAuditLog(r, s, portcullis)
	return r
}

// parseServerFlags parses args into s exactly as the server's command does.
func parseServerFlags(s *options.ServerRunOptions, args []string) (*pflag.FlagSet, error) {
	fs := serverFlagSet(s)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if rest := slices.DeleteFunc(fs.Args(), func(a string) bool { return a == "" }); len(rest) > 0 {
		return nil, fmt.Errorf("kube-apiserver takes no positional argument, got %q", rest)
	}
	return fs, nil
}

// serverFlagSet returns the server's flags, bound to s, as the server's command defines them.
func serverFlagSet(s *options.ServerRunOptions) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// As the server's command (component-base/cli.Run): --etcd_servers is --etcd-servers.
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	for _, named := range serveroptions.NamedFlagSets(s, "kube-apiserver").FlagSets {
		fs.AddFlagSet(named)
	}
	return fs
}

// fileFlags name files the server reads at start-up; each given one must be readable.
var fileFlags = []string{
	"admission-control-config-file", "audit-policy-file", "audit-webhook-config-file",
	"authentication-config", "authentication-token-webhook-config-file", "authorization-config",
	"authorization-policy-file", "authorization-webhook-config-file", "client-ca-file",
	"egress-selector-config-file", "encryption-provider-config", "etcd-cafile", "etcd-certfile",
	"etcd-keyfile", "kubelet-certificate-authority", "kubelet-client-certificate",
	"kubelet-client-key", "oidc-ca-file", "peer-ca-file", "proxy-client-cert-file",
	"proxy-client-key-file", "requestheader-client-ca-file", "service-account-key-file",
	"service-account-signing-key-file", "tls-cert-file", "tls-private-key-file",
	"token-auth-file", "tracing-config-file",
}

func checkFiles(r *PreflightReport, fs *pflag.FlagSet) {
	for _, name := range fileFlags {
		for _, path := range flagValues(fs, name) {
			f, err := os.Open(path)
			if err != nil {
				r.problem("--%s: %v", name, err)
				continue
			}
			f.Close()
		}
	}
}

// flagValues returns the non-empty values of a string, slice or array flag.
func flagValues(fs *pflag.FlagSet, name string) []string {
	f := fs.Lookup(name)
	if f == nil {
		return nil
	}
	var values []string
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		values = sv.GetSlice()
	} else {
		values = []string{f.Value.String()}
	}
	return slices.DeleteFunc(values, func(v string) bool { return v == "" })
}

// Certificate and key pairs that must match, and CA bundles that must parse.
var (
	keyPairFlags = [][2]string{
		{"tls-cert-file", "tls-private-key-file"},
		{"etcd-certfile", "etcd-keyfile"},
		{"kubelet-client-certificate", "kubelet-client-key"},
		{"proxy-client-cert-file", "proxy-client-key-file"},
	}
	caBundleFlags = []string{"client-ca-file", "requestheader-client-ca-file", "etcd-cafile", "kubelet-certificate-authority", "oidc-ca-file", "peer-ca-file"}
)

func checkCertificates(r *PreflightReport, fs *pflag.FlagSet) {
	for _, pair := range keyPairFlags {
		certs, keys := flagValues(fs, pair[0]), flagValues(fs, pair[1])
		if len(certs) != len(keys) {
			r.problem("--%s and --%s go together; only one is given", pair[0], pair[1])
			continue
		}
		if len(certs) == 0 || !readable(certs[0]) || !readable(keys[0]) {
			continue // missing files are reported once, by checkFiles
		}
		if _, err := tls.LoadX509KeyPair(certs[0], keys[0]); err != nil {
			r.problem("--%s %s and --%s %s: %v", pair[0], certs[0], pair[1], keys[0], err)
		}
	}
	for _, name := range caBundleFlags {
		for _, path := range flagValues(fs, name) {
			if !readable(path) {
				continue
			}
			if _, err := cert.NewPool(path); err != nil {
				r.problem("--%s: %v", name, err)
			}
		}
	}
	for _, path := range flagValues(fs, "service-account-key-file") {
		if readable(path) {
			if _, err := keyutil.PublicKeysFromFile(path); err != nil {
				r.problem("--service-account-key-file: %v", err)
			}
		}
	}
	for _, path := range flagValues(fs, "service-account-signing-key-file") {
		if readable(path) {
			if _, err := keyutil.PrivateKeyFromFile(path); err != nil {
				r.problem("--service-account-signing-key-file: %v", err)
			}
		}
	}
}

// admissionChains builds the admission chain the options describe, the way the server
// does — reading --admission-control-config-file and each plugin's configuration, running
// every plugin's own validation — and returns its phases in order. Nothing is contacted:
// the clients' dialer refuses every connection, no informer is started, and the
// background work plugins start while being validated is stopped once the chain is built.
func admissionChains(opts *kubeoptions.AdmissionOptions, globals basecompatibility.ComponentGlobalsRegistry, loopback string) (mutating, validating []string, err error) {
	nowhere := &rest.Config{Host: loopback, Dial: refuseToDial}
	client, err := kubernetes.NewForConfig(nowhere)
	if err != nil {
		return nil, nil, err
	}
	dynamicClient, err := dynamic.NewForConfig(nowhere)
	if err != nil {
		return nil, nil, err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	config := genericapiserver.NewConfig(legacyscheme.Codecs)
	config.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	initializers, err := controlplaneAdmissionConfig(nowhere, factory).New(nil, nil, webhook.NewDefaultServiceResolver(), noop.NewTracerProvider())
	if err != nil {
		return nil, nil, err
	}
	kubeInitializers, err := (&kubeapiserveradmission.Config{}).New()
	if err != nil {
		return nil, nil, err
	}
	// Last, so that it replaces the server's drained notification, which never comes here.
	drained := make(chan struct{})
	defer close(drained)
	kubeInitializers = append(kubeInitializers, drainedInitializer(drained))
	// The recorder goes first so that it sees each plugin itself, not a metrics wrapper.
	recorder := &chainRecorder{}
	opts.GenericAdmission.Decorators = append(admission.Decorators{recorder}, opts.GenericAdmission.Decorators...)
	err = opts.ApplyTo(config, factory, client, dynamicClient,
		globals.FeatureGateFor(basecompatibility.DefaultKubeComponent),
		globals.EffectiveVersionFor(basecompatibility.DefaultKubeComponent),
		append(initializers, kubeInitializers...)...)
	if err != nil {
		return nil, nil, err
	}
	return recorder.mutating, recorder.validating, nil
}

// loopbackHost is the address the server's own loopback clients would use, which
// preflight's clients name but never dial.
func loopbackHost(s *options.ServerRunOptions) string {
	host := "127.0.0.1"
	if ip := s.SecureServing.BindAddress; ip != nil && !ip.IsUnspecified() {
		host = ip.String()
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(s.SecureServing.BindPort))
}

// errNoDialing is what preflight's clients get instead of a connection.
var errNoDialing = errors.New("preflight contacts nothing")

func refuseToDial(context.Context, string, string) (net.Conn, error) { return nil, errNoDialing }

// drainedInitializer gives plugins a drained notification that closes once the chain is
// built, which stops whatever they started in ValidateInitialization.
type drainedInitializer <-chan struct{}

func (d drainedInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(admissioninitializer.WantsDrainedNotification); ok {
		wants.SetDrainedNotification(d)
	}
}

// checkRollback judges, with upstream's own options, plugin registry and loaders, whether
// stock kube-apiserver would start with args less our plugin names: the flags that name
// plugins, --runtime-config against this binary's scheme (which registers the versions
// stock's does, ours adding kinds only: TestStockRegistersServableVersions in package app),
// and the admission chain built from
// the admission config file (every entry of a plugin stock enables, decoded by that plugin).
// It records stock's chains for the comparison.
func checkRollback(r *PreflightReport, args []string, loopback string) {
	stripped := withoutOurPlugins(args)
	r.RollbackEdits = ourPluginNames(args)
	stock := options.NewServerRunOptions()
	if _, err := parseServerFlags(stock, stripped); err != nil {
		r.RollbackBlockers = append(r.RollbackBlockers, fmt.Sprintf("command line: %v", err))
		return
	}
	for _, err := range stock.Admission.Validate() {
		r.RollbackBlockers = append(r.RollbackBlockers, err.Error())
	}
	if _, err := resourceconfig.MergeAPIResourceConfigs(controlplane.DefaultAPIResourceConfigSource(), stock.APIEnablement.RuntimeConfig, legacyscheme.Scheme); err != nil {
		r.RollbackBlockers = append(r.RollbackBlockers, fmt.Sprintf("--runtime-config: %v", err))
	}
	var err error
	r.StockMutating, r.StockValidating, err = admissionChains(stock.Admission, stock.GenericServerRunOptions.ComponentGlobalsRegistry, loopback)
	if err != nil {
		r.StockMutating, r.StockValidating = nil, nil
		if file := stock.Admission.GenericAdmission.ConfigFile; file != "" {
			r.RollbackBlockers = append(r.RollbackBlockers, fmt.Sprintf("admission (--admission-control-config-file %s): %v", file, err))
		} else {
			r.RollbackBlockers = append(r.RollbackBlockers, fmt.Sprintf("admission: %v", err))
		}
	}
}

// checkRepeatedFlags reports each single-valued flag given more than once with different
// values: the server keeps the last silently, so an earlier one (a cluster's own
// --admission-control-config-file, say) is lost. A flag is single-valued when setting only
// its last value gives what setting all of them gives.
func checkRepeatedFlags(r *PreflightReport, args []string) {
	values := map[string][]string{}
	var order []string
	fs := serverFlagSet(options.NewServerRunOptions())
	err := fs.ParseAll(args, func(f *pflag.Flag, value string) error {
		if _, seen := values[f.Name]; !seen {
			order = append(order, f.Name)
		}
		values[f.Name] = append(values[f.Name], value)
		return f.Value.Set(value)
	})
	if err != nil {
		return // reported by the parse proper
	}
	for _, name := range order {
		given := values[name]
		if len(given) < 2 || len(slices.Compact(slices.Clone(given))) < 2 {
			continue
		}
		last := serverFlagSet(options.NewServerRunOptions())
		if err := last.Set(name, given[len(given)-1]); err != nil {
			continue
		}
		if last.Lookup(name).Value.String() == fs.Lookup(name).Value.String() {
			r.problem("--%s is given %d times (%s): the server keeps only the last, %q, and ignores the others", name, len(given), strings.Join(quoteAll(given), ", "), given[len(given)-1])
		}
	}
}

func quoteAll(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strconv.Quote(v)
	}
	return out
}

// checkHostPathMounts reports each file the flags name that none of the static pod's
// hostPath volume mounts (given as mount paths) brings into the container: preflight reads
// it on the host, but the server in its container would not find it.
func (r *PreflightReport) checkHostPathMounts(mounts []string) {
	for _, named := range r.namedFiles {
		flag, path := named[0], named[1]
		if !slices.ContainsFunc(mounts, func(m string) bool { return pathWithin(path, m) }) {
			r.problem("--%s %s: no hostPath volume of the static pod mounts it, so the server in its container cannot read it (mounted: %s)", flag, path, strings.Join(mounts, ", "))
		}
	}
}

// pathWithin reports whether path is dir or lies under it.
func pathWithin(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

var admissionListFlags = []string{"--enable-admission-plugins", "--disable-admission-plugins", "--admission-control"}

// withoutOurPlugins returns args with this distribution's plugin names removed from the
// admission flags, in both --flag=a,b and --flag a,b forms.
func withoutOurPlugins(args []string) []string {
	// The server reads each list as one CSV record (pflag's string slices), so a name may
	// be quoted: read and write it the same way.
	strip := func(list string) string {
		names, err := csv.NewReader(strings.NewReader(list)).Read()
		if err != nil {
			return list // none (io.EOF), or malformed: the server refuses it, as stock does
		}
		names = slices.DeleteFunc(names, func(n string) bool { return portcullisadmission.IsOurs(strings.TrimSpace(n)) })
		var b strings.Builder
		w := csv.NewWriter(&b)
		if err := w.Write(names); err != nil {
			return list
		}
		w.Flush()
		return strings.TrimSuffix(b.String(), "\n")
	}
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		if out[i] == "--" {
			break
		}
		name, value, hasValue := strings.Cut(out[i], "=")
		// Underscores and dashes are the same to the server (cliflag.WordSepNormalizeFunc).
		if !slices.Contains(admissionListFlags, strings.ReplaceAll(name, "_", "-")) {
			continue
		}
		switch {
		case hasValue:
			out[i] = name + "=" + strip(value)
		case i+1 < len(out):
			out[i+1] = strip(out[i+1])
			i++
		}
	}
	return out
}

// ourPluginNames lists, per admission flag, the plugin names of ours args give it: what a
// rollback takes out of the command line.
func ourPluginNames(args []string) []string {
	fs := serverFlagSet(options.NewServerRunOptions())
	found := map[string][]string{}
	_ = fs.ParseAll(args, func(f *pflag.Flag, value string) error {
		if !slices.Contains(admissionListFlags, "--"+f.Name) {
			return nil
		}
		names, err := csv.NewReader(strings.NewReader(value)).Read()
		if err != nil {
			return nil
		}
		for _, n := range names {
			if n = strings.TrimSpace(n); portcullisadmission.IsOurs(n) && !slices.Contains(found[f.Name], n) {
				found[f.Name] = append(found[f.Name], n)
			}
		}
		return nil
	})
	var edits []string
	for _, flag := range admissionListFlags {
		if names := found[strings.TrimPrefix(flag, "--")]; len(names) > 0 {
			edits = append(edits, fmt.Sprintf("remove %s from %s", strings.Join(names, ", "), flag))
		}
	}
	return edits
}

// chainRecorder is an admission decorator that records the plugins of a chain, in order.
type chainRecorder struct {
	mutating, validating []string
}

func (c *chainRecorder) Decorate(handler admission.Interface, name string) admission.Interface {
	if _, ok := handler.(admission.MutationInterface); ok {
		c.mutating = append(c.mutating, name)
	}
	if _, ok := handler.(admission.ValidationInterface); ok {
		c.validating = append(c.validating, name)
	}
	return handler
}

// Print writes the report for an operator.
func (r *PreflightReport) Print(w io.Writer) {
	fmt.Fprintf(w, "Preflight of %s", version.Get().GitVersion)
	if r.Source != "" {
		fmt.Fprintf(w, " for %s", r.Source)
	}
	fmt.Fprintln(w)
	if r.checkedCommandLine {
		fmt.Fprintf(w, "  %d flags checked through kube-apiserver's own options\n", len(r.Args))
	}
	fmt.Fprintln(w)
	if r.Mutating != nil || r.Validating != nil {
		fmt.Fprintf(w, "Mutating admission chain (%d): %s\n", len(r.Mutating), strings.Join(r.Mutating, ", "))
		fmt.Fprintf(w, "Validating admission chain (%d): %s\n\n", len(r.Validating), strings.Join(r.Validating, ", "))
		if r.StockMutating != nil || r.StockValidating != nil {
			fmt.Fprintln(w, "Compared with stock kube-apiserver "+stockVersion()+" with the same flags:")
			diffs := append(chainDiff("mutating", r.StockMutating, r.Mutating), chainDiff("validating", r.StockValidating, r.Validating)...)
			if len(diffs) == 0 {
				fmt.Fprintln(w, "  identical chains")
			}
			for _, d := range diffs {
				fmt.Fprintln(w, "  "+d)
			}
			fmt.Fprintln(w)
		}
	}
	if r.checkedCommandLine {
		edits := "the same command line"
		if len(r.RollbackEdits) > 0 {
			edits = "the command line less Portcullis's plugin names (" + strings.Join(r.RollbackEdits, "; ") + ")"
		}
		if len(r.RollbackBlockers) == 0 {
			fmt.Fprintf(w, "Rollback: stock kube-apiserver %s would start with the same files and %s.\n\n", stockVersion(), edits)
		} else {
			fmt.Fprintf(w, "Rollback is BLOCKED: stock kube-apiserver %s would not start with the same files and %s:\n", stockVersion(), edits)
			for _, b := range r.RollbackBlockers {
				fmt.Fprintf(w, "  - %s\n", b)
			}
			fmt.Fprintln(w)
		}
	}
	if r.WebhookSummary != "" {
		printWebhookFindings(w, r.WebhookSummary, r.WebhookFindings)
		fmt.Fprintln(w)
	}
	if r.PodSecurityPolicy != nil {
		printPodSecurityPolicyReport(w, r.PodSecurityPolicy)
		fmt.Fprintln(w)
	}
	if r.checkedCommandLine && (r.Mutating != nil || r.Validating != nil) {
		if len(r.Refusals) == 0 {
			fmt.Fprintln(w, "Refuses what stock admits: nothing (no plugin or setting of ours that refuses requests enforces).")
		} else {
			fmt.Fprintln(w, "Refuses what stock admits (plugins and settings of ours that enforce; meant?):")
			for _, x := range r.Refusals {
				fmt.Fprintf(w, "  - %s\n", x)
			}
		}
		if len(r.RollbackChanges) > 0 {
			fmt.Fprintln(w, "After a rollback to stock, these verdicts change:")
			for _, x := range r.RollbackChanges {
				fmt.Fprintf(w, "  - %s\n", x)
			}
		}
		fmt.Fprintln(w)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	if len(r.Problems) == 0 {
		switch {
		case !r.checkedCommandLine:
			fmt.Fprintln(w, "No problems found in what was checked.")
		case len(r.Refusals) > 0:
			fmt.Fprintln(w, "No problems found: it starts; the swap is safe, and it refuses what stock admits, as listed above: meant?")
		default:
			fmt.Fprintln(w, "No problems found: it starts; the swap is safe.")
		}
		return
	}
	fmt.Fprintf(w, "%d problem(s):\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	fmt.Fprintln(w, "The swap is NOT safe: it would not start, or not as the node runs it.")
}

// chainDiff lists, in chain order, the plugins one chain has that the other lacks, and
// notes if the shared plugins run in another order.
func chainDiff(phase string, stock, ours []string) []string {
	var out []string
	stockSet, oursSet := sets.New(stock...), sets.New(ours...)
	for _, name := range ours {
		if !stockSet.Has(name) {
			out = append(out, fmt.Sprintf("+ %s (%s; a Portcullis plugin)", name, phase))
		}
	}
	for _, name := range stock {
		if !oursSet.Has(name) {
			out = append(out, fmt.Sprintf("- %s (%s; stock runs it, this binary would not)", name, phase))
		}
	}
	shared := func(list []string, other sets.Set[string]) []string {
		return slices.DeleteFunc(slices.Clone(list), func(n string) bool { return !other.Has(n) })
	}
	if !slices.Equal(shared(stock, oursSet), shared(ours, stockSet)) {
		out = append(out, fmt.Sprintf("! the shared %s plugins run in another order", phase))
	}
	return out
}

// stockVersion is the Kubernetes release this binary is built on.
func stockVersion() string {
	v, _, _ := strings.Cut(version.Get().GitVersion, "+")
	return v
}
