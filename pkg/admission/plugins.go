// Package admission is Portcullis's admission-plugin registry: the one list of every plugin
// this distribution adds to kube-apiserver, where each sits in the chain and what it does.
// Install puts them into upstream's admission options; the command calls it before adding
// flags, so --help and flag validation see the whole set.
package admission

import (
	"io"
	"slices"

	genericadmission "k8s.io/apiserver/pkg/admission"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/releases"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/exec"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initializers"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/persistentvolumelabel"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podpreset"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/securitycontextdeny"
	webhookmutating "github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/mutating"
	webhookvalidating "github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/validating"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhookconfigurationguard"
)

// Plugins returns every admission plugin of this distribution, in insertion order. Each is
// placed relative to a plugin that already exists (upstream's, or one of ours listed earlier),
// named rather than counted, so an upstream bump cannot silently shift it. Every plugin here
// is off by default: operators turn it on with --enable-admission-plugins.
func Plugins() []Plugin {
	return []Plugin{
		{
			// Where upstream had it until 1.30: straight after the namespace checks.
			Name:             securitycontextdeny.PluginName,
			Phase:            Validating,
			Anchor:           After("NamespaceExists"),
			Register:         securitycontextdeny.Register,
			RefusesWorkloads: true,
			Since:            releases.First,
			Refuses: "pods that set runAsUser, supplementalGroups, fsGroup or seLinuxOptions in a security context " +
				"(the pod of kubeadm upgrade's own health-check Job runs as user 999 in kube-system: kubeadm upgrade apply fails)",
		},
		{
			// Mutating: presets go in before LimitRanger sets defaults from the merged pod.
			// Validating: presets themselves are validated when written.
			Name:     podpreset.PluginName,
			Phase:    MutatingAndValidating,
			Anchor:   Before("LimitRanger"),
			Register: podpreset.Register,
			Since:    releases.First,
			Refuses: "new pods (mirror pods and pods excluded by its annotation apart) until its podpresets.settings.k8s.io CRD is " +
				"established and the presets read (not yet ready to handle request): at each start, and for as long as the CRD cannot be created",
		},
		{
			// Where 1.10 had it: before PodPreset, so before LimitRanger, whose defaults then
			// apply only to what it left unset. Mutating only.
			Name:          initialresources.PluginName,
			Phase:         Mutating,
			Anchor:        Before(podpreset.PluginName),
			Register:      initialresources.Register,
			ExampleConfig: initialresources.ExampleConfig,
			CheckConfig:   initialresources.CheckConfiguration,
			Prerequisite: "point it at your Prometheus (prometheus.url in its configuration) or install the VerticalPodAutoscaler first, " +
				"and decide to: it sets the requests of new pods from their data, which changes where and whether they schedule",
			Since: releases.V1372Portcullis1,
		},
		{
			// Where upstream had it until 1.30: before DefaultStorageClass. Mutating only.
			Name:          persistentvolumelabel.PluginName,
			Phase:         Mutating,
			Anchor:        Before("DefaultStorageClass"),
			Register:      persistentvolumelabel.Register,
			ExampleConfig: persistentvolumelabel.ExampleConfig,
			CheckConfig:   persistentvolumelabel.CheckConfiguration,
			RefusesWith:   persistentvolumelabel.RefusesWith,
			Prerequisite: "decide to: it writes zone and region labels (over a user's) and node affinity on new PersistentVolumes, " +
				"which decides where their pods schedule; check docs/plugins/persistentvolumelabel.md's resolvers against your volumes first",
			Since: releases.V1372Portcullis1,
		},
		{
			// Where 1.10 had it: after MutatingAdmissionWebhook, so that a webhook's changes
			// are in the object whose initialization is recorded, and before the validating
			// policies and webhooks, which then see the pending initializers. Mutating only.
			Name:     initializers.PluginName,
			Phase:    Mutating,
			Anchor:   After("MutatingAdmissionWebhook"),
			Register: initializers.Register,
			Refuses: "while the server starts, every create of an object (mirror pods and creates that name their pending initializers apart) once a wait " +
				"for the InitializerConfigurations to be read runs out (500 LoadingConfiguration); a create that names its pending initializers (the " +
				initializers.PendingAnnotation + " annotation) without the initialize verb on the resource, as a controller copying a pending owner's " +
				"annotations does, or names invalid ones; an initialization result on create, or once initialization has completed; an update that adds " +
				"pending initializers, or changes them or the result through a subresource or without initialize; removing a pending pod's scheduling gate; " +
				"an update that sets a failure result is answered with it and the object deleted, or refused when the requester may not delete it",
			Prerequisite: "deploy each initializer's controller before an InitializerConfiguration names it: every new object a configuration " +
				"matches waits for its initializers (a pod does not run until they are done); docs/plugins/initializers.md",
			Since: releases.V1372Portcullis1,
		},
		{
			// Where 1.23 and 1.24 had it: after PodSecurity, before PodNodeSelector. Mutating
			// (a new pod gets its policy's defaults) and validating.
			Name:     podsecuritypolicy.PluginName,
			Phase:    MutatingAndValidating,
			Anchor:   After("PodSecurity"),
			Register: podsecuritypolicy.Register,
			Prerequisite: "create PodSecurityPolicies and grant their use first (build/deploy/podsecuritypolicy/): " +
				"once it is on, a pod that no policy its creator or service account may use admits is refused, kube-system's and mirror pods included",
			Since:   releases.First,
			Refuses: "every pod that no PodSecurityPolicy its creator or service account may use admits, kube-system's and mirror pods included",
		},
		{
			// Validating, and must judge before policies and webhooks do.
			Name:             exec.DenyEscalatingExecPluginName,
			Phase:            Validating,
			Anchor:           Before("MutatingAdmissionPolicy"),
			Register:         exec.RegisterDenyEscalatingExec,
			RefusesWorkloads: true,
			Since:            releases.First,
			Refuses: "kubectl exec and attach into pods that run privileged or share the host's network, PID or IPC namespace " +
				"(kube-system's etcd, kube-apiserver and kube-proxy pods included)",
		},
		{
			Name:             exec.DenyExecOnPrivilegedPluginName,
			Phase:            Validating,
			Anchor:           Before("MutatingAdmissionPolicy"),
			Register:         exec.RegisterDenyExecOnPrivileged,
			RefusesWorkloads: true,
			Since:            releases.First,
			Refuses:          "kubectl exec and attach into pods that run a privileged container",
		},
		{
			// Validating, and before the policies and webhooks (which must stay last, a test
			// holds them there; hence not just before ValidatingAdmissionPolicy): a webhook
			// configuration the guard refuses never reaches a webhook that might itself
			// intercept it.
			Name:          webhookconfigurationguard.PluginName,
			Phase:         Validating,
			Anchor:        Before("MutatingAdmissionPolicy"),
			Register:      webhookconfigurationguard.Register,
			ExampleConfig: webhookconfigurationguard.ExampleConfig,
			CheckConfig:   webhookconfigurationguard.CheckConfiguration,
			RefusesWith:   webhookconfigurationguard.RefusesWith,
			Since:         releases.First,
		},
	}
}

// IsOurs reports whether name is a plugin of this distribution's own: a name stock
// kube-apiserver does not know. The replacements keep upstream's names and are not.
func IsOurs(name string) bool {
	return slices.ContainsFunc(Plugins(), func(p Plugin) bool { return p.Name == name })
}

// Replacements returns the upstream plugins this distribution registers under upstream's
// names: the name keeps upstream's place in the chain, upstream's default (on) and upstream's
// configuration kind (its entry stays upstream's). Upstream's registration of the name is
// then not made; ours builds upstream's own plugin unless the Portcullis entry of the
// admission config file turns on something of ours for it.
func Replacements() []Replacement {
	return []Replacement{
		{
			// MutatingAdmissionWebhook: upstream's plugin, or, with settings of ours, our
			// dispatch (breakers, budget, one serialization per change) over upstream's matching.
			Name:     webhookmutating.PluginName,
			Phase:    Mutating,
			Register: webhookmutating.Register,
		},
		{
			// ValidatingAdmissionWebhook: upstream's plugin, or, with settings of ours, our
			// dispatch (breakers, budget, early exit at the first denial) over upstream's
			// matching.
			Name:     webhookvalidating.PluginName,
			Phase:    Validating,
			Register: webhookvalidating.Register,
		},
	}
}

// Replacement describes a plugin of ours that takes over an upstream plugin's name.
type Replacement struct {
	// Name is the upstream plugin's name, which ours registers under.
	Name  string
	Phase Phase
	// Register registers our plugin under Name; entry gives it, when it is built, the entry
	// upstream's constructor reads and the Portcullis entry.
	Register func(plugins *genericadmission.Plugins, entry func(configFile io.Reader) (io.Reader, *portcullisapi.PortcullisConfiguration))
}

// Phase says which admission phases a plugin takes part in.
type Phase string

const (
	Mutating              Phase = "mutating"
	Validating            Phase = "validating"
	MutatingAndValidating Phase = "mutating, validating"
)

// Mutates reports whether plugins of this phase take part in the mutating phase.
func (p Phase) Mutates() bool { return p == Mutating || p == MutatingAndValidating }

// Validates reports whether plugins of this phase take part in the validating phase.
func (p Phase) Validates() bool { return p == Validating || p == MutatingAndValidating }

// Plugin describes one admission plugin of this distribution.
type Plugin struct {
	// Name is the plugin's PluginName, as operators write it in --enable-admission-plugins.
	Name string
	// Phase is the phase the plugin implements; a test holds the plugin to it.
	Phase Phase
	// Anchor places the plugin in the chain next to a named plugin.
	Anchor Anchor
	// Register registers the plugin's factory.
	Register func(*genericadmission.Plugins)
	// ExampleConfig is a sample of the plugin's configuration for
	// --admission-control-config-file, in YAML; empty when the plugin takes none.
	// `make run` writes it into its admission configuration.
	ExampleConfig string
	// CheckConfig reads the plugin's configuration (nil: none given) as its factory does,
	// files it names included; the command runs it before the server dials etcd.
	CheckConfig func(io.Reader) error
	// Prerequisite, when set, says what an operator must do before enabling the plugin, or
	// the cluster breaks. The deploy examples name such a plugin rather than enable it.
	Prerequisite string
	// RefusesWorkloads says the plugin's validating phase refuses requests ordinary
	// workloads make (pods with a security context, exec into privileged pods): the deploy
	// kit and make run enable it in Warn+Audit enforcement mode, so that turning it on
	// changes no verdict until the operator moves it to Deny.
	RefusesWorkloads bool
	// Refuses says what the plugin refuses that stock admits while it enforces (enforcement
	// mode Deny, the default), for preflight's verdict; empty for a plugin that refuses
	// nothing stock admits on its own (it mutates, or it refuses only what its configuration
	// lists at Deny level).
	Refuses string
	// RefusesWith, when set, says what the plugin refuses that stock admits under its
	// configuration (read from the admission config file's entry; nil: none given) while it
	// enforces: "" for nothing. For a plugin whose refusals its configuration decides.
	RefusesWith func(io.Reader) (string, error)
	// Since is the first release of this distribution that has the plugin: an earlier one
	// refuses its name in the flags, so going back to it needs the name out first.
	Since string
}

// DayOneModes are the enforcement modes the deploy kit and make run give the plugins that
// refuse ordinary workloads: admitted, with a warning to the client and an audit annotation.
var DayOneModes = []string{"Warn", "Audit"}

// Anchor places a plugin immediately before or after another plugin, by name.
type Anchor struct {
	Name  string
	After bool
}

// Before anchors a plugin immediately before the named plugin.
func Before(name string) Anchor { return Anchor{Name: name} }

// After anchors a plugin immediately after the named plugin.
func After(name string) Anchor { return Anchor{Name: name, After: true} }

func (a Anchor) String() string {
	if a.After {
		return "after " + a.Name
	}
	return "before " + a.Name
}
