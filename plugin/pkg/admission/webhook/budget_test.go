package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestBudgetFit(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	settings := &BudgetSettings{DeadlineMargin: 2 * time.Second}
	for _, tc := range []struct {
		name     string
		settings *BudgetSettings
		// timeout is the request's (0: 30s); at is when the call is about to be made.
		timeout     time.Duration
		at          time.Time
		own         time.Duration
		wantTimeout time.Duration
		wantCut     bool
		wantShed    bool
	}{
		{"no budget: the webhook's own timeout", nil, 0, now, 10 * time.Second, 10 * time.Second, false, false},
		{"fits", settings, 0, now, 5 * time.Second, 5 * time.Second, false, false},
		{"fits exactly", settings, 0, now, 28 * time.Second, 28 * time.Second, false, false},
		{"cut to what is left", settings, 0, now, 30 * time.Second, 28 * time.Second, true, false},
		{"no own timeout: what is left", settings, 0, now, 0, 28 * time.Second, true, false},
		{"spent: not called", settings, 0, now.Add(28 * time.Second), 1 * time.Second, 0, true, true},
		{"past the deadline: not called", settings, 0, now.Add(40 * time.Second), 1 * time.Second, 0, true, true},
		{"max duration ends it first", &BudgetSettings{DeadlineMargin: 2 * time.Second, MaxDuration: 3 * time.Second}, 0, now, 10 * time.Second, 3 * time.Second, true, false},
		{"max duration later than the deadline", &BudgetSettings{DeadlineMargin: 2 * time.Second, MaxDuration: time.Minute}, 0, now, 30 * time.Second, 28 * time.Second, true, false},
		// kubectl --request-timeout=2s: the margin is a tenth of it, not the 2s configured,
		// so a healthy webhook is called with its own timeout.
		{"a short request timeout shortens the margin", settings, 2 * time.Second, now, time.Second, time.Second, false, false},
		{"a short request timeout: a slow webhook gets what is left", settings, 2 * time.Second, now, 10 * time.Second, 1800 * time.Millisecond, true, false},
		{"a request timeout at the margin still calls", settings, 2 * time.Second, now.Add(time.Second), 10 * time.Second, 800 * time.Millisecond, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			ctx, cancel := context.WithDeadline(endpointsrequest.WithReceivedTimestamp(context.Background(), now), now.Add(timeout))
			defer cancel()
			got, cut := tc.settings.For(ctx).Fit(tc.at, tc.own)
			if got != tc.wantTimeout {
				t.Errorf("timeout = %s, want %s", got, tc.wantTimeout)
			}
			if (cut != nil) != tc.wantCut || (cut != nil && cut.Shed != tc.wantShed) {
				t.Fatalf("cut = %+v, want cut %v, shed %v", cut, tc.wantCut, tc.wantShed)
			}
		})
	}
}

func TestBudgetCutCountsAgainstTheWebhook(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		settings *BudgetSettings
		at       time.Time
		own      time.Duration
		want     bool
	}{
		// maxDuration 5s below timeoutSeconds 10: every call is cut, and a blackholed
		// webhook must still open its breaker.
		{"max duration below the webhook's timeout, called at once", &BudgetSettings{DeadlineMargin: 2 * time.Second, MaxDuration: 5 * time.Second}, now, 10 * time.Second, true},
		{"max duration below the webhook's timeout, called late", &BudgetSettings{DeadlineMargin: 2 * time.Second, MaxDuration: 5 * time.Second}, now.Add(4 * time.Second), 10 * time.Second, false},
		{"most of its own timeout", &BudgetSettings{DeadlineMargin: 2 * time.Second}, now.Add(22 * time.Second), 10 * time.Second, true},
		{"little of its own timeout", &BudgetSettings{DeadlineMargin: 2 * time.Second}, now.Add(27 * time.Second), 10 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(endpointsrequest.WithReceivedTimestamp(context.Background(), now), now.Add(30*time.Second))
			defer cancel()
			_, cut := tc.settings.For(ctx).Fit(tc.at, tc.own)
			if cut == nil || cut.Shed {
				t.Fatalf("cut = %+v, want a cut call", cut)
			}
			if got := cut.CountsAgainstWebhook(); got != tc.want {
				t.Errorf("a cut call given %s (of %s entitled) counts against the webhook: %v, want %v", cut.Left, cut.Entitled, got, tc.want)
			}
		})
	}
}

func TestBudgetWithoutDeadlineOrReceiptIsUnbounded(t *testing.T) {
	b := (&BudgetSettings{DeadlineMargin: time.Second, MaxDuration: time.Second}).For(context.Background())
	if timeout, cut := b.Fit(time.Now(), 10*time.Second); timeout != 10*time.Second || cut != nil {
		t.Fatalf("Fit = %s, %v; want the webhook's own 10s, uncut", timeout, cut)
	}
}

func TestBudgetErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  *BudgetError
		want []string
	}{
		{&BudgetError{Shed: true, Own: 10 * time.Second, Margin: 2 * time.Second}, []string{"not called", "budget", "2s before the request's deadline", "timeoutSeconds 10"}},
		{&BudgetError{Left: 1500 * time.Millisecond, Own: 10 * time.Second, Margin: 2 * time.Second}, []string{"no answer in the 1.5s left", "timeoutSeconds 10"}},
	} {
		for _, want := range tc.want {
			if !strings.Contains(tc.err.Error(), want) {
				t.Errorf("%q does not say %q", tc.err.Error(), want)
			}
		}
	}
}
