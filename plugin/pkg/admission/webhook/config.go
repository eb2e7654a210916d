// Package webhook is what Portcullis's two webhook admission plugins share: their
// configuration, the per-webhook circuit breakers, the per-request time budget, the call to
// one webhook, the object's serialization reused across calls, the per-webhook enforcement
// modes (modes.go), the idempotency probe (probe.go), and the metrics. The plugins
// themselves, registered under upstream's names, are in mutating/ and validating/; matching
// (which webhooks a request calls) is upstream's generic.Webhook.
package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/version"
	"sigs.k8s.io/yaml"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
)

// Defaults and limits of WebhookDispatchConfiguration.
const (
	DefaultFailureThreshold int32 = 5
	DefaultInitialBackoff         = time.Second
	DefaultMaxBackoff             = 30 * time.Second
	DefaultDeadlineMargin         = 2 * time.Second

	maxFailureThreshold = 1000
	minInitialBackoff   = 100 * time.Millisecond
	maxInitialBackoff   = 10 * time.Minute
	maxMaxBackoff       = time.Hour
	minDeadlineMargin   = 100 * time.Millisecond
	maxDeadlineMargin   = 30 * time.Second
	minMaxDuration      = time.Second
	maxMaxDuration      = 10 * time.Minute

	// maxMaxWait: a webhook's timeoutSeconds is at most 30.
	maxMaxWait = 30 * time.Second

	DefaultProbeMaxInFlight int32 = 2
	maxProbeOneIn                 = 1000000
	maxProbeMaxInFlight           = 64
)

var (
	scheme = runtime.NewScheme()
	// Strict: a misspelt field is an error naming it, not a silently ignored setting.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(admissionv1alpha1.AddToScheme(scheme))
}

// Configuration is what a webhook plugin takes from its entry in the admission config file.
type Configuration struct {
	// Breaker, when not nil, turns the circuit breakers on.
	Breaker *BreakerSettings
	// Budget, when not nil, turns the time budget on.
	Budget *BudgetSettings
	// EarlyExit: the validating dispatch answers at the first denial.
	EarlyExit bool
	// Upstream is the entry in upstream's own kind, for upstream's constructors (which load
	// the kubeconfig and the static manifests directory); nil when the file has no entry.
	Upstream io.Reader
	// Legacy says the settings came from the plugin's own entry, in WebhookDispatchConfiguration:
	// the form of earlier releases, which a stock server refuses.
	Legacy bool
	// Modes soften individual webhooks; a webhook not in it is enforced.
	Modes HookModes
	// MaxWaits bound the request's wait for softened webhooks' verdicts, by webhook (a
	// webhook not in it: as long as it would hold the request enforced).
	MaxWaits map[HookKey]time.Duration
	// Probe, when not nil, turns the idempotency probe on (mutating only).
	Probe *ProbeSettings
	// Traced says the admission trace is on: each webhook call is a sub-step of it. It
	// never puts a plugin on our dispatch by itself (Ours).
	Traced bool
}

// HookKey names a webhook: its configuration's name and its own.
type HookKey struct {
	Configuration, Webhook string
}

// ProbeSettings are the idempotency probe's settings, defaulted.
type ProbeSettings struct {
	// OneIn: one sampled call in OneIn is probed.
	OneIn int
	// MaxInFlight bounds the probes under way.
	MaxInFlight int
}

// HookModes are the enforcement modes of webhooks, by name.
type HookModes map[HookKey]enforcement.Soften

// Of returns the enforcement mode of a webhook (the zero Soften: enforced).
func (m HookModes) Of(configuration, webhook string) enforcement.Soften {
	return m[HookKey{Configuration: configuration, Webhook: webhook}]
}

// Ours says whether the entry asks for anything of our dispatch: one of the settings of
// webhookDispatch (circuitBreaker, timeBudget, earlyExit, enforcementModes,
// idempotencyProbe). When it does not, the plugin is upstream's own, built from Upstream:
// with no settings of ours the server is stock's. The admission trace is not one of them.
func (c *Configuration) Ours() bool {
	return c != nil && (c.Breaker != nil || c.Budget != nil || c.EarlyExit || len(c.Modes) > 0 || c.Probe != nil)
}

// String says which dispatch the settings give a webhook plugin, for the start-up log.
func (c *Configuration) String() string {
	if c == nil || !c.Ours() {
		return "upstream's"
	}
	var parts []string
	if b := c.Breaker; b != nil {
		parts = append(parts, fmt.Sprintf("circuitBreaker{failureThreshold: %d, initialBackoff: %s, maxBackoff: %s}", b.FailureThreshold, b.InitialBackoff, b.MaxBackoff))
	}
	if b := c.Budget; b != nil {
		maxDuration := "none"
		if b.MaxDuration > 0 {
			maxDuration = b.MaxDuration.String()
		}
		parts = append(parts, fmt.Sprintf("timeBudget{deadlineMargin: %s, maxDuration: %s}", b.DeadlineMargin, maxDuration))
	}
	if c.EarlyExit {
		parts = append(parts, "earlyExit")
	}
	if len(c.Modes) > 0 {
		modes := make([]string, 0, len(c.Modes))
		for k, m := range c.Modes {
			mode := fmt.Sprintf("%s/%s=%s", k.Configuration, k.Webhook, m.Label)
			if wait, ok := c.MaxWaits[k]; ok {
				mode += fmt.Sprintf("(maxWait %s)", wait)
			}
			modes = append(modes, mode)
		}
		slices.Sort(modes)
		parts = append(parts, "enforcementModes{"+strings.Join(modes, ", ")+"}")
	}
	if p := c.Probe; p != nil {
		parts = append(parts, fmt.Sprintf("idempotencyProbe{oneIn: %d, maxInFlight: %d}", p.OneIn, p.MaxInFlight))
	}
	if c.Traced {
		parts = append(parts, "admissionTrace")
	}
	return "Portcullis's: " + strings.Join(parts, ", ")
}

// BreakerSettings are the circuit breakers' settings, defaulted.
type BreakerSettings struct {
	FailureThreshold int
	InitialBackoff   time.Duration
	MaxBackoff       time.Duration
}

// BudgetSettings are the time budget's settings, defaulted.
type BudgetSettings struct {
	DeadlineMargin time.Duration
	// MaxDuration is 0 when not set.
	MaxDuration time.Duration
}

// Plugin kinds, for LoadConfiguration and NewDispatch: which settings an entry may carry.
const (
	MutatingPlugin   = false
	ValidatingPlugin = true
)

// LoadConfiguration reads a webhook plugin's own entry of the admission config file. An entry
// in upstream's kind (or none) is handed to upstream unchanged. An entry in
// WebhookDispatchConfiguration, the form of earlier releases (now the Portcullis entry's
// webhookDispatch), is decoded strictly, defaulted and validated, and its kubeConfigFile and
// staticManifestsDir are handed to upstream in upstream's kind; Legacy is then set. validating
// says which of the two plugins the entry is for (earlyExit is the validating plugin's only).
func LoadConfiguration(pluginName string, validating bool, r io.Reader) (*Configuration, error) {
	if r == nil {
		return &Configuration{}, nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: reading configuration: %w", pluginName, err)
	}
	if !IsDispatchKind(data) {
		// Not ours: upstream's loader reads it, and reports its errors, as stock does.
		return &Configuration{Upstream: bytes.NewReader(data)}, nil
	}
	obj, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: decoding configuration: %w", pluginName, err)
	}
	cfg, ok := obj.(*admissionv1alpha1.WebhookDispatchConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: configuration is %v, want %s", pluginName, gvk,
			admissionv1alpha1.SchemeGroupVersion.WithKind("WebhookDispatchConfiguration"))
	}
	var errs field.ErrorList
	for _, p := range []struct {
		path, value string
	}{{"kubeConfigFile", cfg.KubeConfigFile}, {"staticManifestsDir", cfg.StaticManifestsDir}} {
		if p.value != "" && !filepath.IsAbs(p.value) {
			errs = append(errs, field.Invalid(field.NewPath(p.path), p.value, "must be an absolute path"))
		}
	}
	if cfg.StaticManifestsDir != "" && staticManifestsSince != "" {
		errs = append(errs, field.Invalid(field.NewPath("staticManifestsDir"), cfg.StaticManifestsDir,
			"static webhook manifests came with Kubernetes "+staticManifestsSince+"; this release is built on "+version.Get().GitVersion))
	}
	out, dispatchErrs := NewDispatch(&admissionv1alpha1.WebhookDispatchSettings{
		CircuitBreaker: cfg.CircuitBreaker,
		TimeBudget:     cfg.TimeBudget,
		EarlyExit:      cfg.EarlyExit,
	}, validating, nil)
	if errs = append(errs, dispatchErrs...); len(errs) > 0 {
		return nil, fmt.Errorf("%s: invalid configuration: %w", pluginName, errs.ToAggregate())
	}
	upstream, err := json.Marshal(map[string]string{
		"apiVersion":         "apiserver.config.k8s.io/v1",
		"kind":               "WebhookAdmissionConfiguration",
		"kubeConfigFile":     cfg.KubeConfigFile,
		"staticManifestsDir": cfg.StaticManifestsDir,
	})
	if err != nil {
		return nil, err
	}
	out.Upstream = bytes.NewReader(upstream)
	out.Legacy = true
	return out, nil
}

// IsDispatchKind says whether a webhook plugin's entry configuration is in a kind of ours
// (admission.portcullis.io) rather than upstream's.
func IsDispatchKind(data []byte) bool {
	var typeMeta metav1.TypeMeta
	return yaml.Unmarshal(data, &typeMeta) == nil && typeMeta.GroupVersionKind().Group == admissionv1alpha1.GroupName
}

// NewDispatch defaults and validates one plugin's dispatch settings and returns them as a
// Configuration without Upstream; nil settings give nil. fldPath is where the settings sit.
func NewDispatch(settings *admissionv1alpha1.WebhookDispatchSettings, validating bool, fldPath *field.Path) (*Configuration, field.ErrorList) {
	if settings == nil {
		return nil, nil
	}
	settings = settings.DeepCopy()
	SetDefaults(settings)
	errs := Validate(settings, fldPath)
	if settings.EarlyExit && !validating {
		errs = append(errs, field.Invalid(fldPath.Child("earlyExit"), true, "only ValidatingAdmissionWebhook calls webhooks in parallel; mutating webhooks are called one after another"))
	}
	if settings.IdempotencyProbe != nil && validating {
		errs = append(errs, field.Invalid(fldPath.Child("idempotencyProbe"), "set", "only mutating webhooks are probed: a validating webhook's answer changes nothing"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := &Configuration{EarlyExit: settings.EarlyExit}
	for _, m := range settings.EnforcementModes {
		if soften := enforcement.SoftenFor(m.Modes); soften.Softens() {
			if out.Modes == nil {
				out.Modes = HookModes{}
			}
			key := HookKey{Configuration: m.Configuration, Webhook: m.Webhook}
			out.Modes[key] = soften
			if m.MaxWait != nil {
				if out.MaxWaits == nil {
					out.MaxWaits = map[HookKey]time.Duration{}
				}
				out.MaxWaits[key] = m.MaxWait.Duration
			}
		}
	}
	if p := settings.IdempotencyProbe; p != nil {
		out.Probe = &ProbeSettings{OneIn: int(p.OneIn), MaxInFlight: int(*p.MaxInFlight)}
	}
	if b := settings.CircuitBreaker; b != nil {
		out.Breaker = &BreakerSettings{
			FailureThreshold: int(*b.FailureThreshold),
			InitialBackoff:   b.InitialBackoff.Duration,
			MaxBackoff:       b.MaxBackoff.Duration,
		}
	}
	if b := settings.TimeBudget; b != nil {
		out.Budget = &BudgetSettings{DeadlineMargin: b.DeadlineMargin.Duration}
		if b.MaxDuration != nil {
			out.Budget.MaxDuration = b.MaxDuration.Duration
		}
	}
	return out, nil
}

// WithDispatch returns the configuration with the dispatch settings of dispatch — the
// Portcullis entry's, which the command read — in place of the entry's own; a nil dispatch
// keeps the entry's.
func (c *Configuration) WithDispatch(dispatch *Configuration) *Configuration {
	if dispatch == nil {
		return c
	}
	out := *c
	out.Breaker, out.Budget, out.EarlyExit = dispatch.Breaker, dispatch.Budget, dispatch.EarlyExit
	out.Modes, out.MaxWaits, out.Probe, out.Traced = dispatch.Modes, dispatch.MaxWaits, dispatch.Probe, dispatch.Traced
	return &out
}

// SetDefaults fills what a set circuitBreaker or timeBudget leaves out.
func SetDefaults(settings *admissionv1alpha1.WebhookDispatchSettings) {
	if b := settings.CircuitBreaker; b != nil {
		if b.FailureThreshold == nil {
			v := DefaultFailureThreshold
			b.FailureThreshold = &v
		}
		if b.InitialBackoff == nil {
			b.InitialBackoff = &metav1.Duration{Duration: DefaultInitialBackoff}
		}
		if b.MaxBackoff == nil {
			b.MaxBackoff = &metav1.Duration{Duration: max(DefaultMaxBackoff, b.InitialBackoff.Duration)}
		}
	}
	if p := settings.IdempotencyProbe; p != nil && p.MaxInFlight == nil {
		v := DefaultProbeMaxInFlight
		p.MaxInFlight = &v
	}
	if b := settings.TimeBudget; b != nil && b.DeadlineMargin == nil {
		b.DeadlineMargin = &metav1.Duration{Duration: DefaultDeadlineMargin}
	}
}

// Validate checks defaulted settings, naming each bad field under fldPath.
func Validate(settings *admissionv1alpha1.WebhookDispatchSettings, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if b := settings.CircuitBreaker; b != nil {
		path := fldPath.Child("circuitBreaker")
		if v := *b.FailureThreshold; v < 1 || v > maxFailureThreshold {
			errs = append(errs, field.Invalid(path.Child("failureThreshold"), v, fmt.Sprintf("must be from 1 to %d", maxFailureThreshold)))
		}
		errs = append(errs, durationWithin(path.Child("initialBackoff"), b.InitialBackoff.Duration, minInitialBackoff, maxInitialBackoff)...)
		errs = append(errs, durationWithin(path.Child("maxBackoff"), b.MaxBackoff.Duration, b.InitialBackoff.Duration, maxMaxBackoff)...)
	}
	errs = append(errs, validateModes(settings.EnforcementModes, fldPath.Child("enforcementModes"))...)
	if p := settings.IdempotencyProbe; p != nil {
		path := fldPath.Child("idempotencyProbe")
		if p.OneIn < 1 || p.OneIn > maxProbeOneIn {
			errs = append(errs, field.Invalid(path.Child("oneIn"), p.OneIn, fmt.Sprintf("must be from 1 to %d", maxProbeOneIn)))
		}
		if v := *p.MaxInFlight; v < 1 || v > maxProbeMaxInFlight {
			errs = append(errs, field.Invalid(path.Child("maxInFlight"), v, fmt.Sprintf("must be from 1 to %d", maxProbeMaxInFlight)))
		}
	}
	if b := settings.TimeBudget; b != nil {
		path := fldPath.Child("timeBudget")
		errs = append(errs, durationWithin(path.Child("deadlineMargin"), b.DeadlineMargin.Duration, minDeadlineMargin, maxDeadlineMargin)...)
		if b.MaxDuration != nil {
			errs = append(errs, durationWithin(path.Child("maxDuration"), b.MaxDuration.Duration, minMaxDuration, maxMaxDuration)...)
		}
	}
	return errs
}

// validateModes checks the webhooks' enforcement modes: each names a configuration and a
// webhook (as the API requires them: DNS subdomains), once, with valid modes.
func validateModes(modes []admissionv1alpha1.WebhookEnforcement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[HookKey]bool{}
	for i, m := range modes {
		at := fldPath.Index(i)
		for _, f := range []struct{ name, value string }{{"configuration", m.Configuration}, {"webhook", m.Webhook}} {
			if f.value == "" {
				errs = append(errs, field.Required(at.Child(f.name), ""))
				continue
			}
			for _, msg := range validation.IsDNS1123Subdomain(f.value) {
				errs = append(errs, field.Invalid(at.Child(f.name), f.value, msg))
			}
		}
		key := HookKey{Configuration: m.Configuration, Webhook: m.Webhook}
		if seen[key] {
			errs = append(errs, field.Duplicate(at, m.Configuration+"/"+m.Webhook))
		}
		seen[key] = true
		errs = append(errs, enforcement.ValidateModes(m.Modes, at.Child("modes"))...)
		if m.MaxWait != nil {
			switch {
			case !enforcement.SoftenFor(m.Modes).Softens():
				errs = append(errs, field.Invalid(at.Child("maxWait"), m.MaxWait.Duration.String(), "only a webhook in Warn or Audit is waited for: an enforced webhook holds the request until it answers"))
			default:
				errs = append(errs, durationWithin(at.Child("maxWait"), m.MaxWait.Duration, 0, maxMaxWait)...)
			}
		}
	}
	return errs
}

func durationWithin(path *field.Path, d, low, high time.Duration) field.ErrorList {
	if d < low || d > high {
		return field.ErrorList{field.Invalid(path, d.String(), fmt.Sprintf("must be from %s to %s", low, high))}
	}
	return nil
}

// ExampleSettings are sample dispatch settings for a webhook plugin, in the Portcullis
// entry's webhookDispatch: breakers and budget on, at their defaults.
const ExampleSettings = `circuitBreaker:
  failureThreshold: 5
  initialBackoff: 1s
  maxBackoff: 30s
timeBudget:
  deadlineMargin: 2s
`

// ExampleValidatingSettings are ExampleSettings for ValidatingAdmissionWebhook, with its early
// exit on.
const ExampleValidatingSettings = ExampleSettings + "earlyExit: true\n"
