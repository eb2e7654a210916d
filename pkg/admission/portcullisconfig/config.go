// Package portcullisconfig reads the admission config file's Portcullis entry: the one place
// for every setting of this distribution that is not one plugin's own (the webhook dispatch,
// enforcement modes, the APIs of ours served before their plugin is on). No plugin has the
// entry's name, so a stock kube-apiserver never reads it, and the same file starts stock's
// binary (rollback).
//
// The forms of earlier releases are still read, each reported as a Deprecation naming its
// replacement: the EnforcementModes entry, and our WebhookDispatchConfiguration inside the
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook entries (which a stock server
// refuses: it blocks rollback). --runtime-config naming policy/v1beta1 is the command's.
package portcullisconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverapiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverapiv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	webhookmutating "github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/mutating"
	webhookvalidating "github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/validating"
)

// EntryName is the name of the admission config file's entry that holds the
// PortcullisConfiguration.
const EntryName = "Portcullis"

// legacyEnforcementEntryName is the entry that held the EnforcementConfiguration before the
// Portcullis entry.
const legacyEnforcementEntryName = "EnforcementModes"

// ServableAPIs are the APIs of this distribution that servedAPIs may name: the group
// versions of ours the server can serve in upstream groups (pkg/registry; the command's
// nativeAPIs serve them).
func ServableAPIs() []schema.GroupVersion {
	apis := make([]schema.GroupVersion, len(servableResources))
	for i, r := range servableResources {
		apis[i] = r.GroupVersion()
	}
	return apis
}

// servableResources are the resources of ours, one a version, that ServableAPIs serve
// (TestNativeAPIsAreTheServableAPIs holds them to what the native APIs serve).
var servableResources = []schema.GroupVersionResource{
	policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies"),
	admissionregistrationv1alpha1.SchemeGroupVersion.WithResource("initializerconfigurations"),
}

// ServableResources are the resources of ours in the versions ServableAPIs names, in the
// same order: where a version is also stock's (admissionregistration.k8s.io/v1alpha1 with
// upstream's alpha resources turned on), only these say the server is ours.
func ServableResources() []schema.GroupVersionResource { return slices.Clone(servableResources) }

// legacyRuntimeConfigResources are the resources of ours that --runtime-config serves, the
// form of earlier releases: policy/v1beta1's, in which stock serves no resource (its
// PodDisruptionBudgets went in 1.25), so the flag can mean only ours. A stock kube-apiserver
// given the same flag starts and serves nothing there. In the other versions of ours stock
// serves resources of its own: there the flag is stock's and means only what it means there.
var legacyRuntimeConfigResources = []schema.GroupVersionResource{policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")}

// RuntimeConfigServes reports whether resources, the server's merged --runtime-config,
// serve gv as earlier releases did: the version, or a resource of ours in it, explicitly
// enabled.
func RuntimeConfigServes(resources serverstorage.APIResourceConfigSource, gv schema.GroupVersion) bool {
	for _, r := range legacyRuntimeConfigResources {
		if r.GroupVersion() == gv && (resources.VersionExplicitlyEnabled(gv) || resources.ResourceExplicitlyEnabled(r)) {
			return true
		}
	}
	return false
}

// LegacyRuntimeConfigResources are the resources RuntimeConfigServes looks for.
func LegacyRuntimeConfigResources() []schema.GroupVersionResource {
	return slices.Clone(legacyRuntimeConfigResources)
}

// RuntimeConfigDeprecation is the start-up warning, and preflight's, for a --runtime-config
// that serves gv (RuntimeConfigServes).
func RuntimeConfigDeprecation(gv schema.GroupVersion) string {
	return fmt.Sprintf("--runtime-config names %s, the form of earlier releases for serving it: list %s in the admission config file's "+
		"%s entry, servedAPIs, instead (a stock kube-apiserver reads the flag as enabling a version in which it serves nothing)", gv, gv, EntryName)
}

var (
	// admissionConfigScheme decodes the admission config file exactly as upstream's
	// k8s.io/apiserver/pkg/server/options does: the same kinds, strict.
	admissionConfigScheme = runtime.NewScheme()
	// ourScheme holds our configuration kinds.
	ourScheme = runtime.NewScheme()
)

func init() {
	utilruntime.Must(apiserverapi.AddToScheme(admissionConfigScheme))
	utilruntime.Must(apiserverapiv1alpha1.AddToScheme(admissionConfigScheme))
	utilruntime.Must(apiserverapiv1.AddToScheme(admissionConfigScheme))
	utilruntime.Must(admissionv1alpha1.AddToScheme(ourScheme))
}

// Configuration is what the admission config file sets of ours outside our plugins' entries.
// Its zero value is stock's: upstream's webhook plugins, every plugin denying, nothing of ours
// served.
type Configuration struct {
	// File is the admission config file read; "" for none.
	File string
	// EnforcementModes are the plugins' enforcement modes, validated; EnforcementSource says
	// where they were read, for errors.
	EnforcementModes  []admissionv1alpha1.PluginEnforcement
	EnforcementSource string
	// MutatingDispatch and ValidatingDispatch turn on our dispatch for the webhook plugins;
	// nil leaves the plugin upstream's.
	MutatingDispatch, ValidatingDispatch *webhook.Configuration
	// ServedAPIs are APIs of ours to serve whatever the plugins.
	ServedAPIs []schema.GroupVersion
	// Deprecations are the forms of earlier releases the file uses.
	Deprecations []Deprecation
	// TraceOnRequest and TraceAudit turn the admission trace on (admissionTrace).
	TraceOnRequest, TraceAudit bool
	// NewerFields are the fields the Portcullis entry sets that a release after the first
	// added; Entry names the entry, for messages.
	NewerFields []NewerField
	Entry       string
}

// Deprecation is a form of an earlier release, still read for this release.
type Deprecation struct {
	// Message says where the form is and what replaces it.
	Message string
	// BlocksRollback says a stock kube-apiserver refuses to start with it.
	BlocksRollback bool
}

// LogValues are the settings in force, as key/value pairs for the start-up log.
func (c *Configuration) LogValues() []any {
	file := c.File
	if file == "" {
		file = "none"
	}
	modes := make([]string, 0, len(c.EnforcementModes))
	for _, m := range c.EnforcementModes {
		names := make([]string, len(m.Modes))
		for i, mode := range m.Modes {
			names[i] = string(mode)
		}
		modes = append(modes, m.Name+"="+strings.Join(names, "+"))
	}
	served := make([]string, len(c.ServedAPIs))
	for i, gv := range c.ServedAPIs {
		served[i] = gv.String()
	}
	return []any{
		"admissionConfigFile", file,
		"mutatingWebhookDispatch", c.MutatingDispatch.String(),
		"validatingWebhookDispatch", c.ValidatingDispatch.String(),
		"enforcementModes", modes,
		"servedAPIs", served,
		"admissionTrace", c.traceValue(),
	}
}

// traceValue says whether the trace is on, and how it sees each webhook plugin: as one step
// (upstream's dispatch) or each webhook as a sub-step (ours).
func (c *Configuration) traceValue() string {
	if !c.TraceOnRequest && !c.TraceAudit {
		return "off"
	}
	webhooks := func(d *webhook.Configuration) string {
		if d.Ours() {
			return "each webhook"
		}
		return "the plugin as one step"
	}
	return fmt.Sprintf("onRequest=%t audit=%t mutatingWebhooks=%q validatingWebhooks=%q",
		c.TraceOnRequest, c.TraceAudit, webhooks(c.MutatingDispatch), webhooks(c.ValidatingDispatch))
}

// Dispatch returns the dispatch settings for a webhook plugin; nil keeps it upstream's.
func (c *Configuration) Dispatch(validating bool) *webhook.Configuration {
	if c == nil {
		return nil
	}
	if validating {
		return c.ValidatingDispatch
	}
	return c.MutatingDispatch
}

// Serves says whether servedAPIs names gv.
func (c *Configuration) Serves(gv schema.GroupVersion) bool {
	return c != nil && slices.Contains(c.ServedAPIs, gv)
}

// webhookEntries are upstream's webhook plugins, whose entries held our dispatch kind in
// earlier releases; the value says whether the plugin is the validating one.
var webhookEntries = map[string]bool{
	webhookmutating.PluginName:   webhook.MutatingPlugin,
	webhookvalidating.PluginName: webhook.ValidatingPlugin,
}

// Load reads the Portcullis entry of the admission config file (the value of
// --admission-control-config-file; "" for none), and the forms of earlier releases. A file
// without them — a stock file, a legacy unversioned file — gives stock's zero Configuration.
// Errors name the file, the entry and the field.
func Load(file string) (*Configuration, error) {
	c := &Configuration{File: file}
	if file == "" {
		return c, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the admission config file: %w", err)
	}
	decoded, err := runtime.Decode(serializer.NewCodecFactory(admissionConfigScheme, serializer.EnableStrict).UniversalDecoder(), data)
	if err != nil {
		// Files without a kind are upstream's legacy formats, which cannot hold our entry;
		// upstream accepts or refuses them on its own.
		if runtime.IsMissingVersion(err) || runtime.IsMissingKind(err) || runtime.IsNotRegisteredError(err) {
			return c, nil
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	admissionConfig, ok := decoded.(*apiserverapi.AdmissionConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected kind %T", file, decoded)
	}
	seen := map[string]int{}
	for i, entry := range admissionConfig.Plugins {
		if at, ok := seen[entry.Name]; ok && (entry.Name == EntryName || entry.Name == legacyEnforcementEntryName) {
			return nil, fmt.Errorf("%s: plugins[%d]: the entry %s is listed twice (also plugins[%d])", file, i, entry.Name, at)
		}
		seen[entry.Name] = i
	}

	var portcullis *admissionv1alpha1.PortcullisConfiguration
	var portcullisAt entryAt
	if i, ok := seen[EntryName]; ok {
		portcullisAt = newEntryAt(file, i, admissionConfig.Plugins[i])
		data, err := portcullisAt.read()
		if err != nil {
			return nil, err
		}
		if portcullis, err = decode[*admissionv1alpha1.PortcullisConfiguration](data, "PortcullisConfiguration"); err != nil {
			return nil, fmt.Errorf("%s: %w", portcullisAt, err)
		}
		if errs := c.setFrom(portcullis, portcullisAt.path); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", portcullisAt, errs.ToAggregate())
		}
		c.EnforcementSource = fmt.Sprintf("%s: enforcementModes", portcullisAt)
		c.NewerFields, c.Entry = NewerFieldsSet(portcullis), portcullisAt.String()
	}

	if i, ok := seen[legacyEnforcementEntryName]; ok {
		at := newEntryAt(file, i, admissionConfig.Plugins[i])
		data, err := at.read()
		if err != nil {
			return nil, err
		}
		legacy, err := decode[*admissionv1alpha1.EnforcementConfiguration](data, "EnforcementConfiguration")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if errs := enforcement.Validate(legacy.Plugins, at.path.Child("plugins")); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", at, errs.ToAggregate())
		}
		if portcullis != nil && len(portcullis.EnforcementModes) > 0 {
			return nil, fmt.Errorf("%s: enforcement modes are also set by %s: enforcementModes; keep them there only", at, portcullisAt)
		}
		c.EnforcementModes, c.EnforcementSource = legacy.Plugins, at.String()
		c.Deprecations = append(c.Deprecations, Deprecation{Message: fmt.Sprintf(
			"%s: the %s entry is replaced by the %s entry's enforcementModes (kind PortcullisConfiguration); it is read for this release only",
			at, legacyEnforcementEntryName, EntryName)})
	}

	for i, entry := range admissionConfig.Plugins {
		validating, ok := webhookEntries[entry.Name]
		if !ok {
			continue
		}
		at := newEntryAt(file, i, entry)
		data, err := at.read()
		if err != nil || !webhook.IsDispatchKind(data) {
			// Upstream's own entry: upstream's plugin reads it and reports its errors.
			continue
		}
		legacy, err := webhook.LoadConfiguration(entry.Name, validating, bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		field := "mutating"
		if validating {
			field = "validating"
		}
		if c.Dispatch(validating) != nil {
			return nil, fmt.Errorf("%s: %s's dispatch is also set by %s: webhookDispatch.%s; keep it there only, and this entry in upstream's WebhookAdmissionConfiguration", at, entry.Name, portcullisAt, field)
		}
		if legacy.Ours() {
			dispatch := &webhook.Configuration{Breaker: legacy.Breaker, Budget: legacy.Budget, EarlyExit: legacy.EarlyExit}
			if validating {
				c.ValidatingDispatch = dispatch
			} else {
				c.MutatingDispatch = dispatch
			}
		}
		c.Deprecations = append(c.Deprecations, Deprecation{BlocksRollback: true, Message: fmt.Sprintf(
			"%s: WebhookDispatchConfiguration in %s's entry stops a stock kube-apiserver from starting (it reads this entry itself, in upstream's kind): "+
				"move circuitBreaker, timeBudget and earlyExit to the %s entry's webhookDispatch.%s, and give this entry upstream's WebhookAdmissionConfiguration "+
				"(apiserver.config.k8s.io/v1) with the same kubeConfigFile and staticManifestsDir",
			at, entry.Name, EntryName, field)})
	}
	if c.TraceOnRequest || c.TraceAudit {
		// The trace takes the webhook plugins as they are: upstream's plugin is one step,
		// whatever its webhooks did together; a plugin on our dispatch (asked for by a
		// setting of webhookDispatch) records each webhook as a sub-step. The trace alone
		// never moves a plugin onto our dispatch.
		for _, dispatch := range []*webhook.Configuration{c.MutatingDispatch, c.ValidatingDispatch} {
			if dispatch.Ours() {
				dispatch.Traced = true
			}
		}
	}
	return c, nil
}

// setFrom validates the Portcullis entry's configuration and takes its settings.
func (c *Configuration) setFrom(config *admissionv1alpha1.PortcullisConfiguration, fldPath *field.Path) field.ErrorList {
	errs := enforcement.Validate(config.EnforcementModes, fldPath.Child("enforcementModes"))
	c.EnforcementModes = config.EnforcementModes
	if d := config.WebhookDispatch; d != nil {
		path := fldPath.Child("webhookDispatch")
		var dispatchErrs field.ErrorList
		c.MutatingDispatch, dispatchErrs = webhook.NewDispatch(d.Mutating, webhook.MutatingPlugin, path.Child("mutating"))
		errs = append(errs, dispatchErrs...)
		c.ValidatingDispatch, dispatchErrs = webhook.NewDispatch(d.Validating, webhook.ValidatingPlugin, path.Child("validating"))
		errs = append(errs, dispatchErrs...)
	}
	if t := config.AdmissionTrace; t != nil {
		if !t.OnRequest && !t.Audit {
			errs = append(errs, field.Invalid(fldPath.Child("admissionTrace"), "{}", "set onRequest and/or audit, or leave admissionTrace out"))
		}
		c.TraceOnRequest, c.TraceAudit = t.OnRequest, t.Audit
	}
	servable := ServableAPIs()
	for i, name := range config.ServedAPIs {
		path := fldPath.Child("servedAPIs").Index(i)
		gv, err := schema.ParseGroupVersion(name)
		switch {
		case err != nil || gv.Group == "" || gv.Version == "":
			errs = append(errs, field.Invalid(path, name, "must be group/version"))
		case !slices.Contains(servable, gv):
			errs = append(errs, field.NotSupported(path, name, groupVersionStrings(servable)))
		case slices.Contains(c.ServedAPIs, gv):
			errs = append(errs, field.Duplicate(path, name))
		default:
			c.ServedAPIs = append(c.ServedAPIs, gv)
		}
	}
	return errs
}

func groupVersionStrings(gvs []schema.GroupVersion) []string {
	out := make([]string, len(gvs))
	for i, gv := range gvs {
		out[i] = gv.String()
	}
	return out
}

// decode decodes one of our kinds strictly, refusing any other.
func decode[T runtime.Object](data []byte, kind string) (T, error) {
	var zero T
	obj, gvk, err := serializer.NewCodecFactory(ourScheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return zero, err
	}
	out, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("kind %s: want %s", gvk, admissionv1alpha1.SchemeGroupVersion.WithKind(kind))
	}
	return out, nil
}

// entryAt is an entry of the admission config file, for reading and for errors.
type entryAt struct {
	file  string
	index int
	entry apiserverapi.AdmissionPluginConfiguration
	// path is where the entry's configuration sits: configuration for an inline one, nil for
	// one in a file of its own (which the errors name instead).
	path *field.Path
}

func newEntryAt(file string, index int, entry apiserverapi.AdmissionPluginConfiguration) entryAt {
	at := entryAt{file: file, index: index, entry: entry}
	if entry.Configuration != nil {
		at.path = field.NewPath("configuration")
	}
	return at
}

func (a entryAt) String() string {
	s := fmt.Sprintf("%s: plugins[%d] (%s)", a.file, a.index, a.entry.Name)
	if a.entry.Configuration == nil && a.entry.Path != "" {
		s += ": path " + a.resolvedPath()
	}
	return s
}

// resolvedPath is the entry's path, relative to the admission config file as upstream
// resolves it.
func (a entryAt) resolvedPath() string {
	if filepath.IsAbs(a.entry.Path) {
		return a.entry.Path
	}
	return filepath.Join(filepath.Dir(a.file), a.entry.Path)
}

// read returns the entry's configuration, inline or from its path.
func (a entryAt) read() ([]byte, error) {
	switch {
	case a.entry.Configuration != nil:
		return a.entry.Configuration.Raw, nil
	case a.entry.Path != "":
		data, err := os.ReadFile(a.resolvedPath())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("%s: neither configuration nor path is set", a)
	}
}

// Example is a sample Portcullis entry configuration: our webhook dispatch on for both
// plugins, with breakers and budget at their defaults and the validating early exit. `make
// run` and the soak write it.
func Example() string {
	var b strings.Builder
	b.WriteString("apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nwebhookDispatch:\n")
	for _, part := range []struct{ name, settings string }{
		{"mutating", webhook.ExampleSettings},
		{"validating", webhook.ExampleValidatingSettings},
	} {
		fmt.Fprintf(&b, "  %s:\n", part.name)
		for _, line := range strings.Split(strings.TrimRight(part.settings, "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	return b.String()
}
