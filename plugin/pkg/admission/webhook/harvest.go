package webhook

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"k8s.io/apiserver/pkg/admission"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// deferredKey is where a request's context holds its deferredShadows. Upstream makes a new
// admission attributes record for the validating phase (and for each retry of an update), so
// what the two phases share must be the request's: its context.
type deferredKey struct{}

// deferredShadows are a request's shadow batches left to the harvest point.
type deferredShadows struct {
	// armed: the chain has a harvest point that will be reached (set by its mutating steps).
	armed atomic.Bool
	mu    sync.Mutex
	// ended: the request's handler returned; nothing is deferred any more.
	ended   bool
	batches []deferredBatch
	// waitedThisRun: a harvest of the admission run under way waited for verdicts;
	// waitedBefore: one of an earlier run did. A DeleteCollection runs admission once per
	// object under one deadline: it waits in one run only, so that waiting never takes the
	// time of a later object's enforced webhooks. A request tried again (an update after a
	// conflict, a create after a generated name's clash) waits in each try, as stock calls
	// its enforced webhooks again in each.
	waitedThisRun, waitedBefore bool
}

type deferredBatch struct {
	batch  *ShadowBatch
	record func(ctx context.Context, attr admission.Attributes, results []ShadowResult)
}

// WithDeferredShadows gives every request handler serves a place for the shadow batches its
// mutating phase leaves to the harvest point, and for what its admission runs waited. The
// command puts it innermost in the server's handler chain when a webhook is softened (with
// HarvestPoint among the admission decorators); without it the mutating dispatch harvests
// its shadows itself.
func WithDeferredShadows(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := context.WithValue(req.Context(), deferredKey{}, &deferredShadows{})
		// A request answered without reaching the harvest point (refused outside admission,
		// between the phases; a panic; its deadline, which ends the handler while admission
		// may go on) recorded none of its shadows' verdicts; later batches are not deferred.
		defer refuseDeferred(ctx, true)
		handler.ServeHTTP(w, req.WithContext(ctx))
	})
}

func deferredFrom(ctx context.Context) *deferredShadows {
	d, _ := ctx.Value(deferredKey{}).(*deferredShadows)
	return d
}

// Defer leaves batch to the harvest point of ctx's request, which waits for it and hands its
// results to record, and reports whether there is one (when there is not, the caller
// harvests the batch itself).
func Defer(ctx context.Context, batch *ShadowBatch, record func(ctx context.Context, attr admission.Attributes, results []ShadowResult)) bool {
	d := deferredFrom(ctx)
	if d == nil || !d.armed.Load() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return false
	}
	d.batches = append(d.batches, deferredBatch{batch: batch, record: record})
	return true
}

// waitedInEarlierRun says ctx's request is a DeleteCollection that waited for softened
// verdicts in an admission run before this one.
func waitedInEarlierRun(ctx context.Context) bool {
	d := deferredFrom(ctx)
	if d == nil {
		return false
	}
	if info, ok := endpointsrequest.RequestInfoFrom(ctx); !ok || info.Verb != "deletecollection" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waitedBefore
}

// markWaited records that ctx's request waited for softened verdicts in this admission run.
func markWaited(ctx context.Context) {
	if d := deferredFrom(ctx); d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.waitedThisRun = true
	}
}

// endRun ends ctx's request's admission run (at the harvest point).
func endRun(ctx context.Context) {
	if d := deferredFrom(ctx); d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.waitedBefore = d.waitedBefore || d.waitedThisRun
		d.waitedThisRun = false
	}
}

// RefuseUnharvested refuses the batches ctx's request left to the harvest point in an earlier
// admission run that never reached it (an update whose first try met a conflict between its
// phases): the mutating dispatch calls it as a run begins, so that a try discarded before its
// harvest is counted refused rather than harvested with the next try's.
func RefuseUnharvested(ctx context.Context) {
	refuseDeferred(ctx, false)
}

// takeDeferred takes the batches left in ctx's request; ended says no more are deferred.
func takeDeferred(ctx context.Context, ended bool) []deferredBatch {
	d := deferredFrom(ctx)
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = d.ended || ended
	batches := d.batches
	d.batches = nil
	return batches
}

// harvestDeferred waits for the batches left in ctx's request (each call within its bound)
// and records them on it. Batches are harvested one after another: their bounds are points
// in time, so waiting for one overlaps the others.
func harvestDeferred(ctx context.Context, attr admission.Attributes) {
	for _, b := range takeDeferred(ctx, false) {
		b.record(ctx, attr, b.batch.Harvest(ctx))
	}
}

// refuseDeferred closes the batches left in ctx's request, refused: nothing is waited for;
// ended: the request's handler returned.
func refuseDeferred(ctx context.Context, ended bool) {
	for _, b := range takeDeferred(ctx, ended) {
		b.batch.Refuse()
	}
}

// HarvestPoint is an admission decorator that makes the end of the admission chain the point
// where a request waits for its mutating shadows' verdicts and records them: a shadow is
// started at its place in the chain, on a copy, and its wait overlaps the rest of the chain
// (the validating plugins, ResourceQuota). The point is after the chain's last validating
// plugin (upstream's metrics wrapper makes every plugin one), which is called for every
// operation (its own Handles decides whether the plugin runs); a plugin that refuses the
// request closes the batches at once, without waiting, and so does WithDeferredShadows for a
// request refused outside admission (the resource's own validation, between the phases).
//
// Put it last among the decorators, after upstream's metrics: the wait is no plugin's
// latency. Without it (no mutating webhook softened), the mutating dispatch waits for its
// shadows at its own end.
type HarvestPoint struct {
	// validators is the number of validating plugins decorated: Decorate is called in the
	// chain's order, before the first request.
	validators atomic.Int32
}

var _ admission.Decorator = &HarvestPoint{}

// Decorate wraps handler, keeping exactly the phases it has.
func (h *HarvestPoint) Decorate(handler admission.Interface, name string) admission.Interface {
	mutator, mutates := handler.(admission.MutationInterface)
	validator, validates := handler.(admission.ValidationInterface)
	s := harvestStep{Interface: handler, point: h}
	if validates {
		s.place = h.validators.Add(1)
	}
	switch {
	case mutates && validates:
		return &harvestMutatingAndValidating{harvestMutating: harvestMutating{harvestStep: s, mutator: mutator}, validator: validator}
	case mutates:
		return &harvestMutating{harvestStep: s, mutator: mutator}
	case validates:
		return &harvestValidating{harvestStep: s, validator: validator}
	}
	return handler
}

type harvestStep struct {
	admission.Interface
	point *HarvestPoint
	// place is the plugin's place among the validating plugins, from 1 (0: it does not
	// validate).
	place int32
}

// last says the plugin is the chain's last validating plugin: the harvest point.
func (s *harvestStep) last() bool {
	return s.place > 0 && s.place == s.point.validators.Load()
}

// Handles: the harvest point is reached for every operation.
func (s *harvestStep) Handles(op admission.Operation) bool {
	return s.last() || s.Interface.Handles(op)
}

func (s *harvestStep) admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, mutator admission.MutationInterface) error {
	if !s.Interface.Handles(a.GetOperation()) {
		return nil
	}
	if d := deferredFrom(ctx); d != nil && s.point.validators.Load() > 0 {
		d.armed.Store(true)
	}
	err := mutator.Admit(ctx, a, o)
	if err != nil {
		refuseDeferred(ctx, false)
	}
	return err
}

func (s *harvestStep) validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces, validator admission.ValidationInterface) error {
	var err error
	if s.Interface.Handles(a.GetOperation()) {
		err = validator.Validate(ctx, a, o)
	}
	switch {
	case err != nil:
		refuseDeferred(ctx, false)
	case s.last():
		harvestDeferred(ctx, a)
	}
	if s.last() {
		endRun(ctx)
	}
	return err
}

type harvestMutating struct {
	harvestStep
	mutator admission.MutationInterface
}

func (m *harvestMutating) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return m.admit(ctx, a, o, m.mutator)
}

type harvestValidating struct {
	harvestStep
	validator admission.ValidationInterface
}

func (v *harvestValidating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return v.validate(ctx, a, o, v.validator)
}

type harvestMutatingAndValidating struct {
	harvestMutating
	validator admission.ValidationInterface
}

func (m *harvestMutatingAndValidating) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return m.validate(ctx, a, o, m.validator)
}

var (
	_ admission.MutationInterface   = &harvestMutating{}
	_ admission.ValidationInterface = &harvestValidating{}
	_ admission.MutationInterface   = &harvestMutatingAndValidating{}
	_ admission.ValidationInterface = &harvestMutatingAndValidating{}
)
