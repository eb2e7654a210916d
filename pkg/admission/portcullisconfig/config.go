// Package portcullisconfig loads admission.portcullis.io configuration: the admission config
// file's Portcullis entry (Load) and the entries of Portcullis's own plugins (plugins.go).
// Each is decoded strictly, defaulted and converted to its internal kind
// (pkg/apis/admission) with the group's scheme, then validated (pkg/apis/admission/validation);
// the consumers — the enforcement decorator, the webhook dispatch, the trace, preflight and the
// plugins — get the internal, validated configuration and only read it.
//
// The Portcullis entry is no plugin's, so a stock kube-apiserver never reads it, and the same
// file starts stock's binary (rollback). The forms of earlier releases are converted into it
// in legacy.go alone, each reported as a Deprecation naming its replacement.
package portcullisconfig

import (
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

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	admissioninstall "github.com/portcullis-k8s/portcullis/pkg/apis/admission/install"
	admissionv1alpha1 "github.com/portcullis-k8s/portcullis/pkg/apis/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/validation"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

// EntryName is the name of the admission config file's entry that holds the
// PortcullisConfiguration.
const EntryName = "Portcullis"

var (
	// admissionConfigScheme decodes the admission config file exactly as upstream's
	// k8s.io/apiserver/pkg/server/options does: the same kinds, strict.
	admissionConfigScheme = runtime.NewScheme()
	// scheme holds admission.portcullis.io, internal and versioned, with its conversions and
	// defaults.
	scheme = runtime.NewScheme()
	// codecs decode strictly: a misspelt field is an error naming it, not a silently ignored
	// setting.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(apiserverapi.AddToScheme(admissionConfigScheme))
	utilruntime.Must(apiserverapiv1alpha1.AddToScheme(admissionConfigScheme))
	utilruntime.Must(apiserverapiv1.AddToScheme(admissionConfigScheme))
	admissioninstall.Install(scheme)
}

// Configuration is the admission config file's Portcullis entry, defaulted and validated,
// with the forms of earlier releases converted into it, and where it was read. Its zero value
// is stock's: upstream's webhook plugins, every plugin denying, nothing of ours served.
type Configuration struct {
	admission.PortcullisConfiguration

	// File is the admission config file read; "" for none.
	File string
	// Entry names the Portcullis entry (file, index, path), for messages; "" for none.
	Entry string
	// EnforcementSource says where the enforcement modes were read, for errors.
	EnforcementSource string
	// Deprecations are the forms of earlier releases the file uses.
	Deprecations []Deprecation
	// NewerFields are the fields the Portcullis entry sets that a release after the first
	// added.
	NewerFields []NewerField

	// upstreamWebhookEntries are the webhook plugins' own entries converted from
	// WebhookDispatchConfiguration, by plugin (validating or not): UpstreamWebhookEntry.
	upstreamWebhookEntries map[bool][]byte
}

// Deprecation is a form of an earlier release, still read for this release.
type Deprecation struct {
	// Message says where the form is, what replaces it, and when it stops being read.
	Message string
	// BlocksRollback says a stock kube-apiserver refuses to start with it.
	BlocksRollback bool
}

// Dispatch returns a webhook plugin's dispatch settings; nil keeps it upstream's.
func (c *Configuration) Dispatch(validating bool) *admission.WebhookDispatchSettings {
	if c == nil {
		return nil
	}
	return c.WebhookDispatch.Of(validating)
}

// Serves says whether servedAPIs names gv.
func (c *Configuration) Serves(gv schema.GroupVersion) bool {
	return c != nil && slices.Contains(c.ServedAPIs, gv.String())
}

// Load reads the Portcullis entry of the admission config file (the value of
// --admission-control-config-file; "" for none), and the forms of earlier releases. A file
// without them — a stock file, a legacy unversioned file — gives stock's zero Configuration.
// Errors name the file, the entry and the field.
func Load(file string) (*Configuration, error) {
	return load(file, kubecompat.Minor)
}

// load is Load as a build on the Kubernetes minor would read the file.
func load(file, minor string) (*Configuration, error) {
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
	first := map[string]int{}
	for i, entry := range admissionConfig.Plugins {
		at, ok := first[entry.Name]
		switch {
		case ok && (entry.Name == EntryName || entry.Name == legacyEnforcementEntryName):
			return nil, fmt.Errorf("%s: plugins[%d]: the entry %s is listed twice (also plugins[%d])", file, i, entry.Name, at)
		case !ok:
			first[entry.Name] = i
		}
	}

	if i, ok := first[EntryName]; ok {
		at := newEntryAt(file, i, admissionConfig.Plugins[i])
		data, err := at.read()
		if err != nil {
			return nil, err
		}
		config, err := decode[*admission.PortcullisConfiguration](data, "PortcullisConfiguration")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if errs := validation.ValidatePortcullisConfiguration(config, at.path); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", at, errs.ToAggregate())
		}
		c.PortcullisConfiguration = *config
		c.Entry, c.EnforcementSource = at.String(), fmt.Sprintf("%s: enforcementModes", at)
		c.NewerFields = NewerFieldsSet(config)
	}
	if err := c.convertLegacy(file, admissionConfig, first, minor); err != nil {
		return nil, err
	}
	return c, nil
}

// decode decodes one of our kinds strictly into its internal form, defaulted, refusing any
// other kind.
func decode[T runtime.Object](data []byte, kind string) (T, error) {
	var zero T
	obj, gvk, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if gvk != nil && gvk.Version == runtime.APIVersionInternal {
		// The scheme knows the internal kinds, which no file may be written in (and whose
		// fields have no JSON names, so the strict decoder's error would blame a field).
		return zero, fmt.Errorf("apiVersion %s: want %s", gvk.GroupVersion(), versioned)
	}
	if err != nil {
		return zero, err
	}
	out, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("kind %s: want %s", gvk, versioned.WithKind(kind))
	}
	return out, nil
}

// versioned is the version the kinds are written in.
var versioned = schema.GroupVersion{Group: admission.GroupName, Version: "v1alpha1"}

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

// DefaultDeadlineMargin is timeBudget.deadlineMargin's default, which the webhook dispatch
// also keeps back when it waits for softened webhooks with no budget set.
const DefaultDeadlineMargin = admissionv1alpha1.DefaultDeadlineMargin

// ExampleDispatchSettings are sample dispatch settings for a webhook plugin, in the
// Portcullis entry's webhookDispatch: breakers and budget on, at their defaults.
const ExampleDispatchSettings = `circuitBreaker:
  failureThreshold: 5
  initialBackoff: 1s
  maxBackoff: 30s
timeBudget:
  deadlineMargin: 2s
`

// ExampleValidatingDispatchSettings are ExampleDispatchSettings for
// ValidatingAdmissionWebhook, with its early exit on.
const ExampleValidatingDispatchSettings = ExampleDispatchSettings + "earlyExit: true\n"

// Example is a sample Portcullis entry configuration: our webhook dispatch on for both
// plugins, with breakers and budget at their defaults and the validating early exit. `make
// run` and the soak write it.
func Example() string {
	var b strings.Builder
	b.WriteString("apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nwebhookDispatch:\n")
	for _, part := range []struct{ name, settings string }{
		{"mutating", ExampleDispatchSettings},
		{"validating", ExampleValidatingDispatchSettings},
	} {
		fmt.Fprintf(&b, "  %s:\n", part.name)
		for _, line := range strings.Split(strings.TrimRight(part.settings, "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	return b.String()
}
