package webhook

import (
	"context"
	"fmt"
	"time"

	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// Budget is one request's webhook time budget: the calls of a request must end by its end,
// which comes a margin before the request's own deadline (and MaxDuration after the request
// was received, when set), so that the rest of the request (the other admission plugins, the
// write to etcd) still has time when webhooks are slow. The margin is DeadlineMargin, but
// never more than a tenth of the request's timeout: a client's short timeout (kubectl
// --request-timeout=2s) shortens the margin with it, so a healthy webhook is always called.
// The mutating and validating plugins compute it from the same deadline, so they share it.
type Budget struct {
	end time.Time
	// margin is kept for the messages.
	margin time.Duration
	// span is the budget's whole length, from the request's receipt to end (0: unknown).
	span time.Duration
	set  bool
}

// marginFraction: the margin is at most the request's timeout divided by this.
const marginFraction = 10

// For returns ctx's request's budget; a nil *BudgetSettings, or a request without a deadline
// or receipt time, gives none.
func (s *BudgetSettings) For(ctx context.Context) Budget {
	if s == nil {
		return Budget{}
	}
	received, hasReceived := endpointsrequest.ReceivedTimestampFrom(ctx)
	var b Budget
	if deadline, ok := ctx.Deadline(); ok {
		margin := s.DeadlineMargin
		if hasReceived {
			margin = min(margin, deadline.Sub(received)/marginFraction)
		}
		b = Budget{end: deadline.Add(-margin), margin: margin, set: true}
	}
	if s.MaxDuration > 0 && hasReceived {
		if end := received.Add(s.MaxDuration); !b.set || end.Before(b.end) {
			b = Budget{end: end, margin: b.margin, set: true}
		}
	}
	if b.set && hasReceived {
		b.span = b.end.Sub(received)
	}
	return b
}

// WaitEnd is when ctx's request stops waiting for its softened webhooks' verdicts (zero: no
// such time): the end of its time budget, as the budget would end an enforced call; with the
// budget off (s nil), the end of a budget of the default margin. So waiting leaves the rest
// of the request the time a budget leaves it, and never times the request out.
func (s *BudgetSettings) WaitEnd(ctx context.Context) time.Time {
	if s == nil {
		s = &BudgetSettings{DeadlineMargin: portcullisconfig.DefaultDeadlineMargin}
	}
	if b := s.For(ctx); b.set {
		return b.end
	}
	return time.Time{}
}

// Fit returns the timeout to call a webhook with, given its own (0: none) at now. The call
// gets its own timeout when the budget leaves that much, and what is left otherwise (cut);
// with nothing left it is not made (BudgetError.Shed).
func (b Budget) Fit(now time.Time, own time.Duration) (time.Duration, *BudgetError) {
	if !b.set {
		return own, nil
	}
	left := b.end.Sub(now)
	// What the budget would give this webhook at best: its own timeout, within the span.
	entitled := own
	if b.span > 0 && (own <= 0 || own > b.span) {
		entitled = b.span
	}
	if left <= 0 {
		return 0, &BudgetError{Shed: true, Own: own, Margin: b.margin, Entitled: entitled}
	}
	if own > 0 && own <= left {
		return own, nil
	}
	return left, &BudgetError{Left: left, Own: own, Margin: b.margin, Entitled: entitled}
}

// BudgetError says the budget cut a call short, or left it no time at all.
type BudgetError struct {
	// Shed: the call was not made.
	Shed bool
	// Left is the time the cut call was given.
	Left time.Duration
	// Own is the webhook's own timeout (0: none).
	Own    time.Duration
	Margin time.Duration
	// Entitled is the most the budget could give the call: its own timeout, within the
	// budget's whole span (0: unknown).
	Entitled time.Duration
}

// CountsAgainstWebhook says whether a cut call that ran out of its time says something of
// the webhook: it does when the call was given at least half of what the budget could ever
// give it. So a blackholed webhook opens its breaker even when maxDuration is below its
// timeoutSeconds, and a webhook the request reached with little time left is not blamed.
func (e *BudgetError) CountsAgainstWebhook() bool {
	return !e.Shed && e.Entitled > 0 && e.Left >= e.Entitled/2
}

func (e *BudgetError) Error() string {
	own := "no timeoutSeconds"
	if e.Own > 0 {
		own = fmt.Sprintf("timeoutSeconds %d", int(e.Own/time.Second))
	}
	if e.Shed {
		return fmt.Sprintf("not called: the request's webhook time budget, which ends %s before the request's deadline, is spent (the webhook has %s)", e.Margin, own)
	}
	return fmt.Sprintf("no answer in the %s left of the request's webhook time budget, which ends %s before the request's deadline (the webhook has %s)", e.Left.Round(time.Millisecond), e.Margin, own)
}
