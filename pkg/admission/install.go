package admission

import (
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Install registers every plugin of ours into upstream's kube-apiserver admission options,
// sets the recommended order to upstream's with ours inserted at their anchors, and marks
// ours default-off. It must run before the options' flags are added.
//
// The user's --disable-admission-plugins (opts.DisablePlugins) is left alone: defaults live in
// DefaultOffPlugins, so enabling one of ours is just --enable-admission-plugins.
//
// The returned Settings carry the admission config file's Portcullis entry to the plugins
// that read it when the chain is built: set them once the flags are parsed.
func Install(opts *kubeoptions.AdmissionOptions) (*Settings, error) {
	if opts == nil || opts.GenericAdmission == nil {
		return nil, fmt.Errorf("admission options are nil")
	}
	settings := &Settings{}
	if err := replace(opts.GenericAdmission, Replacements(), settings); err != nil {
		return nil, err
	}
	return settings, install(opts.GenericAdmission, Plugins())
}

// Settings hand the Portcullis entry (portcullisconfig.Configuration) to the plugins of ours
// that read it as the chain is built. Each set of admission options has its own; until Set,
// and with no entry, they are stock's (the webhook plugins upstream's own).
type Settings struct {
	config *portcullisconfig.Configuration
}

// Set gives the plugins the Portcullis entry; call it before the chain is built.
func (s *Settings) Set(config *portcullisconfig.Configuration) { s.config = config }

// Config returns what Set gave (nil before).
func (s *Settings) Config() *portcullisconfig.Configuration { return s.config }

// webhookEntries are what a webhook plugin is built from: the entry upstream's constructor
// reads (its own, converted by Load from the form of earlier releases) and the Portcullis
// entry (nil: none).
func (s *Settings) webhookEntries(validating bool, configFile io.Reader) (io.Reader, *portcullisapi.PortcullisConfiguration) {
	if s.config == nil {
		return configFile, nil
	}
	return s.config.UpstreamWebhookEntry(validating, configFile), &s.config.PortcullisConfiguration
}

// replace swaps opts' plugin registry for one where each replacement of ours is registered
// instead of upstream's plugin of its name. Upstream's registry cannot unregister a plugin,
// and refuses a second one of a name, so the new registry is built from upstream's own
// registration functions less the replaced plugins'; it must end up with exactly upstream's
// names, or a Kubernetes bump changed the set and this fails.
func replace(opts *genericoptions.AdmissionOptions, replacements []Replacement, settings *Settings) error {
	stock := sets.New(opts.Plugins.Registered()...)
	plugins := genericadmission.NewPlugins()
	registerUpstreamExceptWebhooks(plugins)
	for _, r := range replacements {
		if !stock.Has(r.Name) {
			return fmt.Errorf("admission plugin %q replaces an upstream plugin, but upstream registers none of that name", r.Name)
		}
		if slices.Contains(plugins.Registered(), r.Name) {
			return fmt.Errorf("admission plugin %q is registered by upstream's functions this registry calls; it cannot be replaced", r.Name)
		}
		validating := r.Phase.Validates()
		r.Register(plugins, func(configFile io.Reader) (io.Reader, *portcullisapi.PortcullisConfiguration) {
			return settings.webhookEntries(validating, configFile)
		})
	}
	if got := sets.New(plugins.Registered()...); !got.Equal(stock) {
		return fmt.Errorf("replacing upstream's admission plugins changed the registered set: missing %v, extra %v",
			sets.List(stock.Difference(got)), sets.List(got.Difference(stock)))
	}
	opts.Plugins = plugins
	return nil
}

// registerUpstreamExceptWebhooks registers what upstream's kube-apiserver registers (the
// generic server's plugins, then kube-apiserver's) but for the two webhook plugins, which
// ours replace.
func registerUpstreamExceptWebhooks(plugins *genericadmission.Plugins) {
	lifecycle.Register(plugins)
	validatingadmissionpolicy.Register(plugins)
	mutatingadmissionpolicy.Register(plugins)
	kubeoptions.RegisterAllAdmissionPlugins(plugins)
}

func install(opts *genericoptions.AdmissionOptions, ours []Plugin) error {
	order, err := Order(opts.RecommendedPluginOrder, ours)
	if err != nil {
		return err
	}
	registered := sets.New(opts.Plugins.Registered()...)
	for _, p := range ours {
		if registered.Has(p.Name) {
			return fmt.Errorf("admission plugin %q is already registered upstream", p.Name)
		}
		p.Register(opts.Plugins)
	}
	opts.RecommendedPluginOrder = order
	// Never share upstream's set: copy it, then add ours.
	defaultOff := sets.New(sets.List(opts.DefaultOffPlugins)...)
	for _, p := range ours {
		defaultOff.Insert(p.Name)
	}
	opts.DefaultOffPlugins = defaultOff
	return nil
}

// Order returns a new list: base with each plugin of ours inserted at its anchor, in the
// order ours are listed. base is not modified.
func Order(base []string, ours []Plugin) ([]string, error) {
	order := slices.Clone(base)
	for _, p := range ours {
		if p.Name == "" {
			return nil, fmt.Errorf("an admission plugin of ours has no name")
		}
		if slices.Contains(order, p.Name) {
			return nil, fmt.Errorf("admission plugin %q is listed twice", p.Name)
		}
		at := slices.Index(order, p.Anchor.Name)
		if at < 0 {
			return nil, fmt.Errorf("admission plugin %q is anchored %s, which is not in the order %v", p.Name, p.Anchor, order)
		}
		if p.Anchor.After {
			at++
		}
		order = slices.Insert(order, at, p.Name)
	}
	return order, nil
}

// EnabledPlugins returns the plugins the admission options enable, in chain order, computed
// as upstream computes them (its own function is unexported): the recommended order, less
// the default-off plugins not enabled and the disabled ones. The deprecated
// --admission-control list, when given, replaces the rest, as upstream has it.
func EnabledPlugins(opts *kubeoptions.AdmissionOptions) []string {
	generic := opts.GenericAdmission
	if len(opts.PluginNames) > 0 {
		return slices.Clone(opts.PluginNames)
	}
	enabled, disabled := sets.New(generic.EnablePlugins...), sets.New(generic.DisablePlugins...)
	var out []string
	for _, name := range generic.RecommendedPluginOrder {
		if disabled.Has(name) || (generic.DefaultOffPlugins.Has(name) && !enabled.Has(name)) {
			continue
		}
		out = append(out, name)
	}
	return out
}
