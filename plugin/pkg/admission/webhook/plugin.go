package webhook

import (
	"io"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/utils/clock"
)

// Settings are what a plugin's dispatcher needs of the plugin's configuration.
type Settings struct {
	// Budget is nil when the budget is off.
	Budget *BudgetSettings
	// Guard holds the breakers (nil when off) and the metrics.
	Guard   Guard
	Metrics *Metrics
}

// SourceFactory builds the source of a plugin's webhook configurations (upstream's
// configuration managers).
type SourceFactory = func(informers.SharedInformerFactory, sets.Set[schema.GroupResource]) generic.Source

// NewWebhook builds a webhook plugin's upstream part (matching, configuration, clients) with
// a dispatcher of ours, from the plugin's entry in the admission config file. step is the
// metrics' step type ("admit" or "validating", as upstream labels them).
func NewWebhook(pluginName, step string, configFile io.Reader, source SourceFactory,
	newDispatcher func(*webhookutil.ClientManager, Settings) generic.Dispatcher) (*generic.Webhook, Settings, error) {
	return newWebhook(pluginName, step, configFile, source, newDispatcher, LegacyMetrics(), clock.RealClock{})
}

func newWebhook(pluginName, step string, configFile io.Reader, source SourceFactory,
	newDispatcher func(*webhookutil.ClientManager, Settings) generic.Dispatcher, metrics *Metrics, clk clock.PassiveClock) (*generic.Webhook, Settings, error) {
	cfg, err := LoadConfiguration(pluginName, configFile)
	if err != nil {
		return nil, Settings{}, err
	}
	d := Settings{Budget: cfg.Budget, Guard: Guard{Metrics: metrics, Step: step}, Metrics: metrics}
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
