package webhook

import (
	"time"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/clock"
)

// Settings are what a plugin's dispatcher needs of the plugin's configuration.
type Settings struct {
	// Budget is nil when the budget is off.
	Budget *BudgetSettings
	// Guard holds the breakers (nil when off) and the metrics.
	Guard   Guard
	Metrics *Metrics
	// EarlyExit: the validating dispatch answers at the first denial.
	EarlyExit bool
	// Modes soften individual webhooks.
	Modes HookModes
	// MaxWaits bound the request's wait for softened webhooks' verdicts.
	MaxWaits map[HookKey]time.Duration
	// Prober, when not nil, probes sampled mutating calls for idempotency.
	Prober *Prober
	// Shadows calls the softened webhooks off the request path (nil when no mode softens).
	Shadows *Shadows
}

// NewWebhook builds a webhook plugin's upstream part (matching, configuration, clients) with
// a dispatcher of ours, for a configuration that asks for our dispatch (cfg.Ours()). step is
// the metrics' step type ("admit" or "validating", as upstream labels them). Our metrics are
// registered here, so a server whose webhook plugins are upstream's has none of them.
func NewWebhook(step string, cfg *Configuration, source SourceFactory,
	newDispatcher func(*webhookutil.ClientManager, Settings) generic.Dispatcher) (*generic.Webhook, Settings, error) {
	return newWebhook(step, cfg, source, newDispatcher, LegacyMetrics(), clock.RealClock{})
}

func newWebhook(step string, cfg *Configuration, source SourceFactory,
	newDispatcher func(*webhookutil.ClientManager, Settings) generic.Dispatcher, metrics *Metrics, clk clock.PassiveClock) (*generic.Webhook, Settings, error) {
	d := Settings{Budget: cfg.Budget, Guard: Guard{Metrics: metrics, Step: step}, Metrics: metrics, EarlyExit: cfg.EarlyExit, Modes: cfg.Modes, MaxWaits: cfg.MaxWaits}
	if len(cfg.Modes) > 0 {
		d.Shadows = NewShadows(metrics, step)
	}
	if cfg.Probe != nil {
		d.Prober = NewProber(*cfg.Probe, metrics)
	}
	if cfg.Breaker != nil {
		d.Guard.Breakers = NewBreakers(*cfg.Breaker, step, metrics, clk)
	}
	handler := admission.NewHandler(admission.Connect, admission.Create, admission.Delete, admission.Update)
	w, err := generic.NewWebhook(handler, cfg.Upstream, source,
		func(cm *webhookutil.ClientManager) generic.Dispatcher { return newDispatcher(cm, d) })
	if err != nil {
		return nil, Settings{}, err
	}
	return w, d, nil
}

// MaxWait is the bound set on the request's wait for a softened webhook's verdict; nil when
// none is (the request waits as long as the webhook would hold it enforced).
func (s Settings) MaxWait(configuration, name string) *time.Duration {
	if wait, ok := s.MaxWaits[HookKey{Configuration: configuration, Webhook: name}]; ok {
		return &wait
	}
	return nil
}
