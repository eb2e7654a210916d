package webhook

import (
	"context"
	"fmt"
	"time"

	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Budget is one request's webhook time budget: the calls of a request must end by its end,
// which comes DeadlineMargin before the request's own deadline (and MaxDuration after the
// request was received, when set), so that the rest of the request (the other admission
// plugins, the write to etcd) still has time when webhooks are slow. The mutating and
// validating plugins compute it from the same deadline, so they share it.
type Budget struct {
	end time.Time
	// margin is kept for the messages.
	margin time.Duration
	set    bool
}

// For returns ctx's request's budget; a nil *BudgetSettings, or a request without a deadline
// or receipt time, gives none.
func (s *BudgetSettings) For(ctx context.Context) Budget {
	if s == nil {
		return Budget{}
	}
	var b Budget
	if deadline, ok := ctx.Deadline(); ok {
		b = Budget{end: deadline.Add(-s.DeadlineMargin), margin: s.DeadlineMargin, set: true}
	}
	if s.MaxDuration > 0 {
		if received, ok := endpointsrequest.ReceivedTimestampFrom(ctx); ok {
			if end := received.Add(s.MaxDuration); !b.set || end.Before(b.end) {
				b = Budget{end: end, margin: b.margin, set: true}
			}
		}
	}
	return b
}

// Fit returns the timeout to call a webhook with, given its own (0: none) at now. The call
// gets its own timeout when the budget leaves that much, and what is left otherwise (cut);
// with nothing left it is not made (BudgetError.Shed).
func (b Budget) Fit(now time.Time, own time.Duration) (time.Duration, *BudgetError) {
	if !b.set {
		return own, nil
	}
	left := b.end.Sub(now)
	if left <= 0 {
		return 0, &BudgetError{Shed: true, Own: own, Margin: b.margin}
	}
	if own > 0 && own <= left {
		return own, nil
	}
	return left, &BudgetError{Left: left, Own: own, Margin: b.margin}
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
