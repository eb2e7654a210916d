package webhook

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// A breaker is kept per webhook, not per resolved endpoint: failurePolicy and timeoutSeconds
// are per webhook, one service often serves several webhooks on different paths that fail
// independently, and operators and the stock metrics name webhooks, not endpoints. It is
// keyed by what identifies the webhook and determines its health: its configuration (name
// and UID, so a deleted and recreated configuration starts afresh), its name, and a hash of
// its clientConfig and timeoutSeconds. Upstream rebuilds its accessors on every informer
// event (a resync, a no-op rewrite by an injector); the key, and so the breaker, survives
// that, and changes when the webhook's endpoint or timeout does.

// breakerState is a breaker's state; its value is the breaker-state metric's.
type breakerState int

const (
	breakerClosed breakerState = iota
	breakerHalfOpen
	breakerOpen
)

func (s breakerState) String() string {
	return [...]string{"closed", "half-open", "open"}[s]
}

// probeExpiry is how long a probe may be out before another call probes instead: longer
// than any webhook timeout (30 s at most), so only a lost outcome can reach it.
const probeExpiry = time.Minute

// breakerIdleExpiry is how long a breaker nobody consults is kept: webhooks of deleted
// configurations must not be remembered for ever.
const breakerIdleExpiry = 10 * time.Minute

// Breakers holds the circuit breakers of one plugin's webhooks.
type Breakers struct {
	settings BreakerSettings
	clock    clock.PassiveClock
	// jitter returns a factor in [0.8, 1.2) for a backoff.
	jitter  func() float64
	metrics *Metrics
	step    string
	// logger records each state change, at the default verbosity: an operator reading the
	// log learns when a webhook stopped being called, and when it was called again.
	logger klog.Logger

	// configurationUID returns the UID of the webhook configuration of a name ("" when
	// unknown: a static manifest's, or before the plugin has its informers).
	configurationUID func(name string) string

	mu        sync.Mutex
	byWebhook map[string]*breaker
	// keys caches each accessor's key: an accessor's webhook never changes, and upstream
	// hands out the same accessors until a configuration event. Cleared by sweep.
	keys      map[webhook.WebhookAccessor]string
	lastSweep time.Time
}

type breaker struct {
	key   string
	name  string
	state breakerState
	// failures counts consecutive failed calls while closed.
	failures int
	// backoff is the current wait between probes.
	backoff time.Duration
	probeAt time.Time
	// probing is set while the one probe call of a half-open breaker is out, since
	// probeStarted.
	probing      bool
	probeStarted time.Time
	lastErr      string
	lastUsed     time.Time
}

// NewBreakers returns breakers for a plugin whose metrics' step type is step ("admit" or
// "validating", as upstream labels them).
func NewBreakers(settings BreakerSettings, step string, metrics *Metrics, clk clock.PassiveClock) *Breakers {
	return &Breakers{
		settings:  settings,
		clock:     clk,
		jitter:    func() float64 { return 0.8 + 0.4*rand.Float64() },
		metrics:   metrics,
		step:      step,
		logger:    klog.Background().WithName("webhook-circuit-breaker"),
		byWebhook: map[string]*breaker{},
		keys:      map[webhook.WebhookAccessor]string{},
	}
}

// SetConfigurationUIDs tells the breakers how to find a configuration's UID by its name (a
// lister of the plugin's webhook configurations). Without it, configurations are told apart
// by name alone.
func (bs *Breakers) SetConfigurationUIDs(uid func(name string) string) {
	if bs == nil {
		return
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.configurationUID = uid
}

// keyOf is h's breaker key; bs.mu is held.
func (bs *Breakers) keyOf(h webhook.WebhookAccessor) string {
	if key, ok := bs.keys[h]; ok {
		return key
	}
	uid := ""
	if bs.configurationUID != nil {
		uid = bs.configurationUID(h.GetConfigurationName())
	}
	key := BreakerKey(h.GetConfigurationName(), uid, h.GetName(), h.GetClientConfig(), h.GetTimeoutSeconds())
	bs.keys[h] = key
	return key
}

// BreakerKey is the identity a breaker is kept under: the configuration's name and UID, the
// webhook's name, and a hash of what determines how its calls fare (its clientConfig and
// timeoutSeconds). Not its position in the configuration, nor its rules or selectors.
func BreakerKey(configuration, uid, name string, clientConfig any, timeoutSeconds *int32) string {
	h := fnv.New64a()
	// Marshalling a struct is deterministic; it cannot fail for API types.
	raw, _ := json.Marshal(struct {
		ClientConfig   any    `json:"c"`
		TimeoutSeconds *int32 `json:"t"`
	}{clientConfig, timeoutSeconds})
	h.Write(raw)
	return configuration + "/" + uid + "/" + name + "/" + hex.EncodeToString(h.Sum(nil))
}

// Permit is a breaker's answer to a call about to be made.
type Permit struct {
	b *Breakers
	// br is the breaker that granted it; nil when the breakers are off.
	br    *breaker
	probe bool
}

// BreakerOpenError is why a call was not made: the webhook's breaker is open. It goes to the
// client whose call was not made, so it says nothing of the earlier calls that opened the
// breaker (their errors may carry the webhook's address and another user's object, and their
// count other users' traffic): those are in the breaker's log lines.
type BreakerOpenError struct {
	ProbeAt time.Time
	ProbeIn time.Duration
	// Probing says a probe call is already out.
	Probing bool
}

func (e *BreakerOpenError) Error() string {
	when := fmt.Sprintf("the next probe call is in %s (at %s)", e.ProbeIn.Round(time.Millisecond), e.ProbeAt.UTC().Format(time.RFC3339))
	if e.Probing {
		when = "a probe call is in progress"
	}
	return "circuit breaker open; not called; " + when
}

// Allow says whether a call to h may be made. When it may, the caller must report the
// call's outcome through the permit. A nil *Breakers allows every call.
func (bs *Breakers) Allow(h webhook.WebhookAccessor) (Permit, *BreakerOpenError) {
	if bs == nil {
		return Permit{}, nil
	}
	now := bs.clock.Now()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.sweep(now)
	key := bs.keyOf(h)
	b := bs.byWebhook[key]
	if b == nil {
		// New, or its endpoint, timeout or configuration changed: what an earlier breaker
		// learnt says nothing of this webhook.
		b = &breaker{key: key, name: h.GetName(), backoff: bs.settings.InitialBackoff}
		bs.byWebhook[key] = b
		bs.metrics.setBreakerState(b.name, bs.step, breakerClosed)
	}
	b.lastUsed = now
	switch {
	case b.state == breakerClosed:
		return Permit{b: bs, br: b}, nil
	case (!b.probing || now.Sub(b.probeStarted) > probeExpiry) && !now.Before(b.probeAt):
		b.probing, b.probeStarted = true, now
		bs.setState(b, breakerHalfOpen)
		return Permit{b: bs, br: b, probe: true}, nil
	default:
		return Permit{}, &BreakerOpenError{
			ProbeAt: b.probeAt, ProbeIn: max(b.probeAt.Sub(now), 0), Probing: b.probing,
		}
	}
}

// Outcome is what became of a permitted call.
type Outcome int

const (
	// Succeeded: the webhook answered with a valid admission response (allowing or not).
	Succeeded Outcome = iota
	// Failed: the call failed for the webhook's sake (see Classify).
	Failed
	// Abandoned: the call ended for the request's sake (cancelled, out of budget); it says
	// nothing of the webhook.
	Abandoned
)

// Done reports the outcome of the permitted call to the breaker that permitted it. reason is
// the failure, when Failed. An outcome for a breaker no longer kept (its webhook changed, or
// it was swept) says nothing of the webhook now in force, and is dropped.
func (p Permit) Done(outcome Outcome, reason error) {
	if p.br == nil {
		return
	}
	bs := p.b
	now := bs.clock.Now()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := p.br
	if bs.byWebhook[b.key] != b {
		return
	}
	if p.probe {
		b.probing = false
	}
	switch outcome {
	case Succeeded:
		b.failures = 0
		b.backoff = bs.settings.InitialBackoff
		if b.state != breakerClosed {
			bs.setState(b, breakerClosed)
		}
	case Failed:
		b.failures++
		b.lastErr = "unknown"
		if reason != nil {
			b.lastErr = reasonOf(reason).Error()
		}
		switch {
		case p.probe:
			// A failed probe: wait longer before the next.
			b.backoff = min(2*b.backoff, bs.settings.MaxBackoff)
			bs.open(b, now)
		case b.state == breakerClosed && b.failures >= bs.settings.FailureThreshold:
			bs.open(b, now)
		}
	case Abandoned:
		if p.probe && b.state == breakerHalfOpen {
			// No verdict: the next call probes again.
			bs.setState(b, breakerOpen)
		}
	}
}

func (bs *Breakers) open(b *breaker, now time.Time) {
	wait := time.Duration(float64(b.backoff) * bs.jitter())
	b.probeAt = now.Add(wait)
	bs.setState(b, breakerOpen)
}

func (bs *Breakers) setState(b *breaker, s breakerState) {
	if b.state != s {
		bs.metrics.breakerTransition(b.name, bs.step, s)
		bs.logTransition(b, s)
	}
	b.state = s
	bs.metrics.setBreakerState(b.name, bs.step, s)
}

// logTransition logs b's change to state s, once, with what an operator acts on.
func (bs *Breakers) logTransition(b *breaker, s breakerState) {
	keys := []any{"webhook", b.name, "type", bs.step, "from", b.state.String(), "to", s.String()}
	switch s {
	case breakerOpen:
		bs.logger.Info("Admission webhook circuit breaker open: its calls fail fast (failurePolicy applies) until a probe succeeds",
			append(keys, "consecutiveFailures", b.failures, "lastError", b.lastErr, "nextProbeIn", max(b.probeAt.Sub(bs.clock.Now()), 0).Round(time.Millisecond))...)
	case breakerHalfOpen:
		bs.logger.Info("Admission webhook circuit breaker half-open: one probe call goes through", keys...)
	case breakerClosed:
		bs.logger.Info("Admission webhook circuit breaker closed: the webhook answered, its calls go through again", keys...)
	}
}

// sweep forgets breakers nobody has consulted for breakerIdleExpiry; it runs at most once a
// minute.
func (bs *Breakers) sweep(now time.Time) {
	if now.Sub(bs.lastSweep) < time.Minute {
		return
	}
	bs.lastSweep = now
	// Accessors of past configuration events are let go; the keys in use are found again.
	clear(bs.keys)
	for key, b := range bs.byWebhook {
		if now.Sub(b.lastUsed) > breakerIdleExpiry {
			delete(bs.byWebhook, key)
			if !bs.nameInUse(b.name) {
				bs.metrics.forgetBreaker(b.name, bs.step)
			}
		}
	}
}

// nameInUse says whether a breaker kept is for a webhook of this name: the state metric is
// labelled by name, as upstream's webhook metrics are, and webhooks of two configurations
// may share a name.
func (bs *Breakers) nameInUse(name string) bool {
	for _, b := range bs.byWebhook {
		if b.name == name {
			return true
		}
	}
	return false
}

// State returns the state of h's breaker, for tests and diagnostics.
func (bs *Breakers) State(h webhook.WebhookAccessor) string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b := bs.byWebhook[bs.keyOf(h)]; b != nil {
		return b.state.String()
	}
	return breakerClosed.String()
}
