// Package webhook is what Portcullis's two webhook admission plugins share: their
// configuration, the per-webhook circuit breakers, the per-request time budget, the call to
// one webhook, the object's serialization reused across calls, the per-webhook enforcement
// modes (modes.go), the idempotency probe (probe.go), and the metrics. The plugins
// themselves, registered under upstream's names, are in mutating/ and validating/; matching
// (which webhooks a request calls) is upstream's generic.Webhook.
package webhook

import (
	"io"
	"slices"
	"time"

	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Configuration is what a webhook plugin takes from its entry in the admission config file.
type Configuration struct {
	// ours: the settings ask for our dispatch (Ours).
	ours bool
	// Breaker, when not nil, turns the circuit breakers on.
	Breaker *BreakerSettings
	// Budget, when not nil, turns the time budget on.
	Budget *BudgetSettings
	// EarlyExit: the validating dispatch answers at the first denial.
	EarlyExit bool
	// Upstream is the entry in upstream's own kind, for upstream's constructors (which load
	// the kubeconfig and the static manifests directory); nil when the file has no entry.
	Upstream io.Reader
	// Modes soften individual webhooks; a webhook not in it is enforced.
	Modes HookModes
	// MaxWaits bound the request's wait for softened webhooks' verdicts, by webhook (a
	// webhook not in it: as long as it would hold the request enforced).
	MaxWaits map[HookKey]time.Duration
	// Probe, when not nil, turns the idempotency probe on (mutating only).
	Probe *ProbeSettings
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

// Ours says whether the settings ask for anything of our dispatch (the Portcullis entry's
// WebhookDispatchSettings.Ours, which NewConfiguration took). When they do not, the plugin is
// upstream's own, built from Upstream: with no settings of ours the server is stock's.
func (c *Configuration) Ours() bool { return c != nil && c.ours }

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

// Plugin kinds, for NewConfiguration: which of the two plugins the settings are for.
const (
	MutatingPlugin   = false
	ValidatingPlugin = true
)

// Softens says whether settings put a webhook in Warn or Audit: then mutating shadows are
// harvested at the end of the chain (HarvestPoint).
func Softens(settings *portcullisapi.WebhookDispatchSettings) bool {
	return settings != nil && slices.ContainsFunc(settings.EnforcementModes, func(m portcullisapi.WebhookEnforcement) bool {
		return portcullisapi.Softens(m.Modes)
	})
}

// NewConfiguration is a webhook plugin's configuration: upstream is the entry for upstream's
// constructors (portcullisconfig.Configuration.UpstreamWebhookEntry: the plugin's own entry, in
// upstream's kind; nil for none), and its dispatch settings are the Portcullis entry's (config,
// as portcullisconfig.Load defaulted, validated and converted it, the form of earlier releases
// included; nil for none).
func NewConfiguration(upstream io.Reader, config *portcullisapi.PortcullisConfiguration, validating bool) *Configuration {
	out := &Configuration{Upstream: upstream}
	var settings *portcullisapi.WebhookDispatchSettings
	if config != nil {
		settings = config.WebhookDispatch.Of(validating)
	}
	if settings == nil {
		return out
	}
	out.ours = settings.Ours()
	out.EarlyExit = settings.EarlyExit
	for _, m := range settings.EnforcementModes {
		soften := enforcement.SoftenFor(m.Modes)
		if !soften.Softens() {
			continue
		}
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
	return out
}
