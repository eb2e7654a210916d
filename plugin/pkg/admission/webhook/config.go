// Package webhook is what Portcullis's two webhook admission plugins share: their
// configuration, the per-webhook circuit breakers, the per-request time budget, the call to
// one webhook, the object's serialization reused across calls, the per-webhook enforcement
// modes (modes.go), the idempotency probe (probe.go), and the metrics. The plugins
// themselves, registered under upstream's names, are in mutating/ and validating/; matching
// (which webhooks a request calls) is upstream's generic.Webhook.
package webhook

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

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

// Plugin kinds, for NewConfiguration: which of the two plugins the settings are for.
const (
	MutatingPlugin   = false
	ValidatingPlugin = true
)

// Softens says whether settings put a webhook in Warn or Audit: then mutating shadows are
// harvested at the end of the chain (HarvestPoint).
func Softens(settings *portcullisapi.WebhookDispatchSettings) bool {
	if settings == nil {
		return false
	}
	for _, m := range settings.EnforcementModes {
		if enforcement.SoftenFor(m.Modes).Softens() {
			return true
		}
	}
	return false
}

// NewConfiguration is a webhook plugin's configuration: upstream is its own entry for
// upstream's constructors (in upstream's kind: portcullisconfig.WebhookEntry converts the
// form of earlier releases; nil for none), and its dispatch settings are the Portcullis
// entry's (config, as portcullisconfig.Load defaulted and validated it; nil for none) or,
// when that sets none, legacy's (the earlier form's, from the plugin's own entry).
func NewConfiguration(upstream io.Reader, config *portcullisapi.PortcullisConfiguration, legacy *portcullisapi.WebhookDispatchSettings, validating bool) *Configuration {
	out := &Configuration{Upstream: upstream}
	var settings *portcullisapi.WebhookDispatchSettings
	if config != nil {
		settings = config.WebhookDispatch.Of(validating)
	}
	if settings == nil {
		settings, out.Legacy = legacy, legacy != nil
	}
	if settings == nil {
		return out
	}
	// The trace takes the plugin as it is: upstream's is one step, whatever its webhooks
	// did together; ours (asked for by a setting of its own) records each webhook as a
	// sub-step. The trace alone never moves a plugin onto our dispatch.
	if config != nil && config.AdmissionTrace != nil && (config.AdmissionTrace.OnRequest || config.AdmissionTrace.Audit) {
		out.Traced = settings.Ours()
	}
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
