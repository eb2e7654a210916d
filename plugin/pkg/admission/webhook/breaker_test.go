package webhook

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	testingclock "k8s.io/utils/clock/testing"
)

func accessor(config, name string) webhook.WebhookAccessor {
	return accessorFor(config, &admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: clientConfig("https://hook.example.com/validate")})
}

// accessorFor is a new accessor of h, as upstream builds one at every configuration event.
func accessorFor(config string, h *admissionregistrationv1.ValidatingWebhook) webhook.WebhookAccessor {
	return webhook.NewValidatingWebhookAccessor(config+"/"+h.Name+"/0", config, h)
}

func clientConfig(url string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: []byte("bundle")}
}

func newTestBreakers(threshold int) (*Breakers, *testingclock.FakePassiveClock) {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	bs := NewBreakers(BreakerSettings{FailureThreshold: threshold, InitialBackoff: time.Second, MaxBackoff: 4 * time.Second}, "validating", NewMetrics(), clk)
	bs.jitter = func() float64 { return 1 }
	return bs, clk
}

var errRefused = errors.New("connection refused")

// fail makes n permitted calls that fail.
func fail(t *testing.T, bs *Breakers, h webhook.WebhookAccessor, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		p, open := bs.Allow(h)
		if open != nil {
			t.Fatalf("call %d short-circuited: %v", i+1, open)
		}
		p.Done(Failed, errRefused)
	}
}

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes []Outcome
		open     bool
	}{
		{"threshold failures", []Outcome{Failed, Failed, Failed}, true},
		{"one short", []Outcome{Failed, Failed}, false},
		{"success resets the count", []Outcome{Failed, Failed, Succeeded, Failed, Failed}, false},
		{"abandoned calls count for nothing", []Outcome{Failed, Abandoned, Failed, Abandoned, Failed}, true},
		{"abandoned calls do not reset", []Outcome{Failed, Failed, Abandoned, Failed}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, _ := newTestBreakers(3)
			h := accessor("cfg", "hook.example.com")
			for _, o := range tc.outcomes {
				p, open := bs.Allow(h)
				if open != nil {
					t.Fatalf("short-circuited before the last outcome: %v", open)
				}
				p.Done(o, errRefused)
			}
			_, open := bs.Allow(h)
			if (open != nil) != tc.open {
				t.Fatalf("open = %v, want %v (state %s)", open, tc.open, bs.State(h))
			}
		})
	}
}

func TestBreakerProbes(t *testing.T) {
	bs, clk := newTestBreakers(2)
	h := accessor("cfg", "hook.example.com")
	fail(t, bs, h, 2)

	_, open := bs.Allow(h)
	if open == nil {
		t.Fatal("breaker did not open after 2 failures")
	}
	for _, want := range []string{"circuit breaker open; not called", "next probe call is in 1s", "12:00:01Z"} {
		if !strings.Contains(open.Error(), want) {
			t.Errorf("open breaker's message %q does not say %q", open.Error(), want)
		}
	}
	// The client whose call was not made learns nothing of the calls that opened it.
	for _, leak := range []string{"connection refused", "consecutive"} {
		if strings.Contains(open.Error(), leak) {
			t.Errorf("open breaker's message %q tells of earlier calls (%q)", open.Error(), leak)
		}
	}

	// Before the backoff: still open. At it: one probe, the others short-circuit.
	clk.SetTime(clk.Now().Add(999 * time.Millisecond))
	if _, open := bs.Allow(h); open == nil {
		t.Fatal("breaker probed before its backoff ended")
	}
	clk.SetTime(clk.Now().Add(time.Millisecond))
	probe, open := bs.Allow(h)
	if open != nil {
		t.Fatalf("no probe after the backoff: %v", open)
	}
	if got := bs.State(h); got != "half-open" {
		t.Errorf("state during the probe = %s, want half-open", got)
	}
	if _, open := bs.Allow(h); open == nil || !open.Probing || !strings.Contains(open.Error(), "a probe call is in progress") {
		t.Fatalf("a second call during the probe was not short-circuited as probing: %v", open)
	}

	// A failed probe doubles the backoff: 2s, then 4s, capped at 4s.
	probe.Done(Failed, errRefused)
	for _, wait := range []time.Duration{2 * time.Second, 4 * time.Second, 4 * time.Second} {
		clk.SetTime(clk.Now().Add(wait - time.Millisecond))
		if _, open := bs.Allow(h); open == nil {
			t.Fatalf("probed before the %s backoff ended", wait)
		}
		clk.SetTime(clk.Now().Add(time.Millisecond))
		probe, open = bs.Allow(h)
		if open != nil {
			t.Fatalf("no probe after the %s backoff: %v", wait, open)
		}
		probe.Done(Failed, errRefused)
	}

	// A successful probe closes the breaker and resets the backoff.
	clk.SetTime(clk.Now().Add(4 * time.Second))
	probe, _ = bs.Allow(h)
	probe.Done(Succeeded, nil)
	if got := bs.State(h); got != "closed" {
		t.Fatalf("state after a successful probe = %s, want closed", got)
	}
	fail(t, bs, h, 2)
	if _, open := bs.Allow(h); open == nil || open.ProbeIn != time.Second {
		t.Fatalf("after closing, the backoff did not start again at 1s: %v", open)
	}
}

func TestBreakerAbandonedProbeLetsTheNextCallProbe(t *testing.T) {
	bs, clk := newTestBreakers(1)
	h := accessor("cfg", "hook.example.com")
	fail(t, bs, h, 1)
	clk.SetTime(clk.Now().Add(time.Second))
	probe, open := bs.Allow(h)
	if open != nil {
		t.Fatal(open)
	}
	probe.Done(Abandoned, nil)
	if _, open := bs.Allow(h); open != nil {
		t.Fatalf("after an abandoned probe, the next call did not probe: %v", open)
	}
}

func TestBreakerLostProbeExpires(t *testing.T) {
	bs, clk := newTestBreakers(1)
	h := accessor("cfg", "hook.example.com")
	fail(t, bs, h, 1)
	clk.SetTime(clk.Now().Add(time.Second))
	if _, open := bs.Allow(h); open != nil { // a probe whose outcome never comes
		t.Fatal(open)
	}
	clk.SetTime(clk.Now().Add(probeExpiry + time.Second))
	if _, open := bs.Allow(h); open != nil {
		t.Fatalf("a lost probe blocked probing for good: %v", open)
	}
}

func TestBreakerIdentity(t *testing.T) {
	base := func() *admissionregistrationv1.ValidatingWebhook {
		return &admissionregistrationv1.ValidatingWebhook{Name: "hook.example.com", ClientConfig: clientConfig("https://hook.example.com/validate"), TimeoutSeconds: ptr(int32(10))}
	}
	for _, tc := range []struct {
		name string
		// change is what the configuration event did; uid is the configuration's UID after it.
		change   func(*admissionregistrationv1.ValidatingWebhook)
		uid      string
		wantOpen bool
	}{
		{name: "a resync rebuilds the accessors", change: func(*admissionregistrationv1.ValidatingWebhook) {}, uid: "uid-1", wantOpen: true},
		{name: "a no-op rewrite by an injector", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.CABundle = []byte("bundle") }, uid: "uid-1", wantOpen: true},
		{name: "rules and selectors do not make another webhook", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}}}
		}, uid: "uid-1", wantOpen: true},
		{name: "another endpoint", change: func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = clientConfig("https://other.example.com/validate")
		}, uid: "uid-1"},
		{name: "another CA bundle", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.CABundle = []byte("rotated") }, uid: "uid-1"},
		{name: "another timeout", change: func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr(int32(5)) }, uid: "uid-1"},
		{name: "the configuration deleted and recreated", change: func(*admissionregistrationv1.ValidatingWebhook) {}, uid: "uid-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, _ := newTestBreakers(1)
			uid := "uid-1"
			bs.SetConfigurationUIDs(func(name string) string {
				if name != "cfg" {
					t.Errorf("looked up the UID of configuration %q", name)
				}
				return uid
			})
			fail(t, bs, accessorFor("cfg", base()), 1)
			changed := base()
			tc.change(changed)
			uid = tc.uid
			_, open := bs.Allow(accessorFor("cfg", changed))
			if (open != nil) != tc.wantOpen {
				t.Fatalf("breaker open after the event: %v, want %v", open, tc.wantOpen)
			}
		})
	}
}

func TestBreakersArePerWebhook(t *testing.T) {
	bs, _ := newTestBreakers(1)
	fail(t, bs, accessor("cfg", "hook.example.com"), 1)
	if _, open := bs.Allow(accessor("cfg", "other.example.com")); open != nil {
		t.Fatalf("another webhook's breaker opened: %v", open)
	}
	if _, open := bs.Allow(accessor("another-cfg", "hook.example.com")); open != nil {
		t.Fatalf("the same webhook name in another configuration shares the breaker: %v", open)
	}
}

func TestPermitOfAChangedWebhookIsDropped(t *testing.T) {
	bs, _ := newTestBreakers(1)
	old := &admissionregistrationv1.ValidatingWebhook{Name: "hook.example.com", ClientConfig: clientConfig("https://old.example.com/")}
	permit, open := bs.Allow(accessorFor("cfg", old))
	if open != nil {
		t.Fatal(open)
	}
	// The webhook moves to another endpoint while the old call is out; the old call fails.
	moved := &admissionregistrationv1.ValidatingWebhook{Name: "hook.example.com", ClientConfig: clientConfig("https://new.example.com/")}
	if _, open := bs.Allow(accessorFor("cfg", moved)); open != nil {
		t.Fatal(open)
	}
	permit.Done(Failed, errRefused)
	if _, open := bs.Allow(accessorFor("cfg", moved)); open != nil {
		t.Fatalf("the old endpoint's failure opened the new endpoint's breaker: %v", open)
	}
}

func ptr[T any](v T) *T { return &v }

func TestBreakerJitterStaysWithinAFifth(t *testing.T) {
	bs, _ := newTestBreakers(1)
	bs.jitter = NewBreakers(BreakerSettings{}, "", nil, nil).jitter
	for i := 0; i < 1000; i++ {
		if j := bs.jitter(); j < 0.8 || j >= 1.2 {
			t.Fatalf("jitter factor %v outside [0.8, 1.2)", j)
		}
	}
}

func TestNilBreakersAllowEverything(t *testing.T) {
	var bs *Breakers
	p, open := bs.Allow(accessor("cfg", "hook.example.com"))
	if open != nil {
		t.Fatal(open)
	}
	p.Done(Failed, errRefused) // must not panic
}

// TestBreakerLogsEachTransition: every state change is logged once, at the default
// verbosity, with the webhook's name; calls that change nothing log nothing.
func TestBreakerLogsEachTransition(t *testing.T) {
	bs, clk := newTestBreakers(2)
	var lines []string
	bs.logger = funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
	h := accessor("cfg", "hook.example.com")

	fail(t, bs, h, 2)                        // closed -> open
	if _, open := bs.Allow(h); open == nil { // open: short-circuited, no change
		t.Fatal("the breaker did not open")
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	p, open := bs.Allow(h) // open -> half-open
	if open != nil {
		t.Fatalf("no probe: %v", open)
	}
	p.Done(Succeeded, nil) // half-open -> closed
	p, _ = bs.Allow(h)     // closed: no change
	p.Done(Succeeded, nil)

	want := []string{
		`"webhook"="hook.example.com" "type"="validating" "from"="closed" "to"="open" "consecutiveFailures"=2 "lastError"="connection refused" "nextProbeIn"="1s"`,
		`"webhook"="hook.example.com" "type"="validating" "from"="open" "to"="half-open"`,
		`"webhook"="hook.example.com" "type"="validating" "from"="half-open" "to"="closed"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines logged, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i := range want {
		if !strings.Contains(lines[i], want[i]) {
			t.Errorf("line %d:\n%s\nwant it to hold\n%s", i+1, lines[i], want[i])
		}
	}
}
