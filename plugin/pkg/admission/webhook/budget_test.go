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
	deadline := now.Add(10 * time.Second)
	settings := &BudgetSettings{DeadlineMargin: 2 * time.Second}
	for _, tc := range []struct {
		name        string
		settings    *BudgetSettings
		at          time.Time
		own         time.Duration
		wantTimeout time.Duration
		wantCut     bool
		wantShed    bool
	}{
		{"no budget: the webhook's own timeout", nil, now, 10 * time.Second, 10 * time.Second, false, false},
		{"fits", settings, now, 5 * time.Second, 5 * time.Second, false, false},
		{"fits exactly", settings, now, 8 * time.Second, 8 * time.Second, false, false},
		{"cut to what is left", settings, now, 10 * time.Second, 8 * time.Second, true, false},
		{"no own timeout: what is left", settings, now, 0, 8 * time.Second, true, false},
		{"spent: not called", settings, now.Add(8 * time.Second), 1 * time.Second, 0, true, true},
		{"past the deadline: not called", settings, now.Add(20 * time.Second), 1 * time.Second, 0, true, true},
		{"max duration ends it first", &BudgetSettings{DeadlineMargin: 2 * time.Second, MaxDuration: 3 * time.Second}, now, 10 * time.Second, 3 * time.Second, true, false},
		{"max duration later than the deadline", &BudgetSettings{DeadlineMargin: 2 * time.Second, MaxDuration: time.Minute}, now, 10 * time.Second, 8 * time.Second, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(endpointsrequest.WithReceivedTimestamp(context.Background(), now), deadline)
			defer cancel()
			timeout, cut := tc.settings.For(ctx).Fit(tc.at, tc.own)
			if timeout != tc.wantTimeout {
				t.Errorf("timeout = %s, want %s", timeout, tc.wantTimeout)
			}
			if (cut != nil) != tc.wantCut || (cut != nil && cut.Shed != tc.wantShed) {
				t.Fatalf("cut = %+v, want cut %v, shed %v", cut, tc.wantCut, tc.wantShed)
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
