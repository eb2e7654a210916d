package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"
)

// Softened webhooks (enforcement mode Warn and/or Audit: mutating shadows and softened
// validating webhooks) are called off the request path. At its place in the chain a
// softened webhook is given a copy of the request's attributes (the object as it stood
// there), and the call starts at once on a goroutine of its own, with the webhook's own
// timeout and a context of its own (never the request's, which may be gone by then); its
// outcome is classified exactly as the enforced dispatch would act on it.
//
// The request waits for its softened calls' verdicts where they are harvested (Harvest: the
// end of the validating dispatch; for mutating shadows, the end of the admission chain,
// HarvestPoint), so that Warn reaches the client and Audit the request's audit event. It
// waits for each call at most as long as the enforced webhook would hold it (its
// timeoutSeconds, within the request's time budget, or the default margin before its
// deadline when the budget is off), or the webhook's maxWait when set (0s: not at all). A
// request refused first does not wait. Every verdict is counted once, by what became of it
// (the Shadow* results) and logged.
//
// Bounds, per webhook, so that no webhook's calls hold another's back: at most
// ShadowCallsPerWebhook calls under way, and at most ShadowBytesPerWebhook held by their
// copies, each call's counted as ShadowCopyFactor times the JSON of its object and old
// object (the JSON itself, and an estimate of the two deep copies made from it: a decoded
// object takes more memory than its JSON). A plugin's pool thus holds at most those times its
// softened webhooks, which the configuration names. Nothing is queued: a call waiting for a
// place would cost its request the wait. Room is taken before anything is copied: a call
// beyond a bound is not made, costs the request no copy, and is counted as dropped.
const (
	// ShadowCallsPerWebhook: a request waits for its calls, so calls under way are about the
	// webhook's rate times its latency (1,024: 5,120 matching requests a second at 200 ms,
	// 1,024 at 1 s); each costs a goroutine and its copies, which the byte bound caps.
	ShadowCallsPerWebhook = 1024
	// ShadowBytesPerWebhook fits the largest call: an object and its old object at etcd's
	// default request limit (1.5 MiB each), three times their JSON.
	ShadowBytesPerWebhook = 32 << 20
	// ShadowCopyFactor: a call's bytes are this many times its objects' JSON.
	ShadowCopyFactor = 3
	// shadowDefaultTimeout bounds a softened call of a webhook without timeoutSeconds.
	shadowDefaultTimeout = 30 * time.Second
)

// Outcomes recorded for a softened call, beside OutcomeWouldDeny and OutcomeWouldPatch.
const (
	// OutcomeWouldFail: enforced, the call's failure would refuse the request (a failed
	// call under failurePolicy Fail, a patch that does not apply, a patch on an operation
	// without an object, ...).
	OutcomeWouldFail = "would_fail"
)

// What became of a softened call, for the shadow_calls_total metric.
const (
	// ShadowInTime: the verdict came while its request waited for it, and is recorded on it.
	ShadowInTime = "in_time"
	// ShadowLate: the verdict came after its request stopped waiting for it (past its
	// maxWait, its timeout or the request's time budget).
	ShadowLate = "late"
	// ShadowAsync: the verdict of a webhook whose maxWait is 0s: the request never waits.
	ShadowAsync = "async"
	// ShadowRefused: the request was refused (by another plugin or webhook, or outside
	// admission), or ended, before the verdict could be recorded on it; it did not wait.
	ShadowRefused = "refused"
	// ShadowDropped: the call was not made (its webhook's share was full, or the server was
	// shutting down).
	ShadowDropped = "dropped"
)

// ShadowVerdict is what a softened call found, classified as the enforced dispatch would
// have acted on it.
type ShadowVerdict struct {
	// Outcome is OutcomeWouldDeny, OutcomeWouldFail or OutcomeWouldPatch, or "" when the
	// enforced webhook would have let the request through unchanged (admitted, or failed
	// open under Ignore).
	Outcome string
	// Message is the webhook's denial message (would_deny).
	Message string
	// Reason is why the call failed (would_fail, or failed open): for the log only, as it
	// may name the webhook's URL.
	Reason error
	// Patch and Paths: the patch not applied and the paths it would change (would_patch).
	Patch []byte
	Paths []string
	// FailedOpen: enforced, the webhook would have been failed open (Ignore).
	FailedOpen bool
}

// ShadowResult is a softened call's verdict and what the webhook itself asked to record.
type ShadowResult struct {
	Softened Softened
	Verdict  ShadowVerdict
	// Warnings and Annotations are the webhook's own (its response's warnings and audit
	// annotations).
	Warnings    []string
	Annotations map[string]string
	Duration    time.Duration
	// Index orders the results as the chain does.
	Index int
}

// ShadowCall is a softened call to make off the request path.
type ShadowCall struct {
	Softened Softened
	Index    int
	// Timeout is the webhook's own (0: none).
	Timeout time.Duration
	// Deadline is the request's, when the call was submitted (zero: none). Enforced, the
	// call would have run on the request's context: an answer later than the deadline
	// would have timed the request out, whatever the webhook answered.
	Deadline time.Time
	// WaitEnd is when the request stops waiting for any verdict (zero: no such time);
	// BudgetSettings.WaitEnd.
	WaitEnd time.Time
	// MaxWait, when not nil, bounds the request's wait for the verdict (0: none at all).
	MaxWait *time.Duration
	// Size is the bytes the call's copies hold (ShadowCopyFactor times their JSON).
	Size int64
	// FailOpenOnPanic: a panic during the call is failed open, as upstream's validating
	// dispatcher fails it open under failurePolicy Ignore; otherwise it is a would_fail.
	FailOpenOnPanic bool
	// Ignore: the webhook's failurePolicy is Ignore, so a call that cannot be made (its
	// object cannot be encoded) fails open, as enforced.
	Ignore bool
	// Do makes the call with ctx and the attributes' copy, and classifies it. It must not
	// touch the request.
	Do func(ctx context.Context) ShadowVerdict
	// Annotations returns what the call recorded on its copy of the attributes.
	Annotations func() map[string]string
}

// Shadows is one plugin's bounded pool of softened calls.
type Shadows struct {
	calls    int
	maxBytes int64
	metrics  *Metrics
	step     string

	mu sync.Mutex
	// shares are the webhooks' own bounds' use, by webhook (configured webhooks only:
	// bounded).
	shares  map[HookKey]*hookShare
	drained bool
	// wg counts the calls under way, for tests.
	wg sync.WaitGroup
	// awaitForTest makes Harvest wait for every call of its batch: only tests set it.
	awaitForTest bool
}

// hookShare is what one webhook's calls under way take.
type hookShare struct {
	calls int
	bytes int64
}

type shadowJob struct {
	call  ShadowCall
	batch *ShadowBatch
	id    int
	share *hookShare
	// submitted is when the request reached the call's place in the chain.
	submitted time.Time
}

// NewShadows returns a pool with the default bounds.
func NewShadows(metrics *Metrics, step string) *Shadows {
	return newShadows(metrics, step, ShadowCallsPerWebhook, ShadowBytesPerWebhook)
}

func newShadows(metrics *Metrics, step string, calls int, maxBytes int64) *Shadows {
	return &Shadows{calls: calls, maxBytes: maxBytes, metrics: metrics, step: step, shares: map[HookKey]*hookShare{}}
}

// AwaitForTest makes every Harvest wait for its batch's calls: tests that assert what a
// softened call records on the request use it. It must not be set in a server.
func (s *Shadows) AwaitForTest() { s.awaitForTest = true }

// Wait waits for every call under way (tests).
func (s *Shadows) Wait() { s.wg.Wait() }

// Batch starts the softened calls of one dispatch.
func (s *Shadows) Batch() *ShadowBatch {
	return &ShadowBatch{shadows: s, changed: make(chan struct{}), waits: map[int]time.Time{}, started: time.Now()}
}

// ShadowBatch gathers the results of one dispatch's softened calls until it is harvested
// (or refused).
type ShadowBatch struct {
	shadows *Shadows
	mu      sync.Mutex
	// changed is closed (and replaced) when a call of the batch ends.
	changed chan struct{}
	// pending are the verdicts in, not yet recorded nor counted.
	pending []pendingResult
	// waits are the calls under way, by id, with the time until which the request waits
	// for each.
	waits  map[int]time.Time
	nextID int
	closed bool
	// refused: closed because the request was refused.
	refused bool
	// noWait: harvested without waiting, the request (a DeleteCollection) having waited
	// in an earlier admission run; verdicts not in are counted as async.
	noWait bool
	// started is when the dispatch began (its first call).
	started time.Time
}

// pendingResult is a verdict in, with the time until which its request waited for it (zero:
// a verdict found on the request path, always recorded).
type pendingResult struct {
	result  ShadowResult
	until   time.Time
	arrived time.Time
	maxWait *time.Duration
}

// Submit starts c, whose copies are made already, or drops it (counted) when its webhook's
// share is full. It never blocks.
func (b *ShadowBatch) Submit(c ShadowCall) {
	s := b.shadows
	share, why := s.take(c.Softened)
	if share == nil {
		s.drop(c, why)
		return
	}
	if !s.reserve(share, c.Size) {
		s.release(share)
		s.drop(c, "its webhook's copies are at their byte bound")
		return
	}
	b.start(c, share)
}

// SubmitCopy starts a softened call on a copy of attr, or drops it (counted) when its
// webhook's share is full. Room (a place, then bytes) is taken before the copy is made, so a
// call dropped costs the request no copy. bind completes c (Do, Annotations) with the copy of
// the attributes and of their serialization. It never blocks.
func (b *ShadowBatch) SubmitCopy(c ShadowCall, attr *admission.VersionedAttributes, encoded *EncodedObjects,
	bind func(c *ShadowCall, attr *admission.VersionedAttributes, encoded *EncodedObjects)) {
	s := b.shadows
	share, why := s.take(c.Softened)
	if share == nil {
		s.drop(c, why)
		return
	}
	if !s.reserve(share, 0) {
		// Full already: not even the serialization is needed.
		s.release(share)
		s.drop(c, "its webhook's copies are at their byte bound")
		return
	}
	// The JSON is the enforced calls' own (serialized once per object and shared).
	objJSON, oldJSON, err := objectsJSON(attr, encoded)
	if err != nil {
		s.release(share)
		// Enforced, the call could not be made either: a failed call, refused under Fail.
		reason := fmt.Errorf("encoding the object for the webhook: %w", err)
		verdict := ShadowVerdict{Outcome: OutcomeWouldFail, Reason: reason}
		if c.Ignore {
			verdict = ShadowVerdict{FailedOpen: true, Reason: reason}
		}
		b.Settle(c.Softened, c.Index, c.MaxWait, verdict)
		return
	}
	c.Size = ShadowCopyFactor * int64(len(objJSON)+len(oldJSON))
	if !s.reserve(share, c.Size) {
		s.release(share)
		s.drop(c, "its webhook's copies are at their byte bound")
		return
	}
	shadowAttr, shadowEncoded := copyAttributes(attr, objJSON, oldJSON)
	bind(&c, shadowAttr, shadowEncoded)
	b.start(c, share)
}

// Settle records a softened webhook's verdict found on the request path, without a call (its
// matching failed, its copy could not be made), as a call's verdict is recorded: delivered
// to the batch, counted and logged. With maxWait 0s it is not recorded on the request either.
func (b *ShadowBatch) Settle(softened Softened, index int, maxWait *time.Duration, v ShadowVerdict) {
	b.shadows.finish(b, -1, pendingResult{result: ShadowResult{Softened: softened, Verdict: v, Index: index}, maxWait: maxWait})
}

func (s Softened) key() HookKey { return HookKey{Configuration: s.Configuration, Webhook: s.Name} }

// take takes a place for one call of softened's webhook, or says why there is none.
func (s *Shadows) take(softened Softened) (*hookShare, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drained {
		return nil, "the server is shutting down"
	}
	share := s.shares[softened.key()]
	if share == nil {
		share = &hookShare{}
		s.shares[softened.key()] = share
	}
	if share.calls >= s.calls {
		return nil, "its webhook's calls under way are at their bound"
	}
	share.calls++
	return share, ""
}

// release gives back a place taken for a call not made.
func (s *Shadows) release(share *hookShare) {
	s.mu.Lock()
	defer s.mu.Unlock()
	share.calls--
}

// reserve takes size bytes of share's bound, or reports they are not there (size 0: whether
// any are).
func (s *Shadows) reserve(share *hookShare, size int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if share.bytes+size > s.maxBytes || share.bytes >= s.maxBytes {
		return false
	}
	share.bytes += size
	return true
}

// waitUntil is how long the request waits for c's verdict, from submitted: the enforced
// call's own bound (its timeout, within the request's wait end), or c's maxWait when shorter.
func (c ShadowCall) waitUntil(submitted time.Time) time.Time {
	wait := shadowTimeout(c.Timeout)
	if c.MaxWait != nil && *c.MaxWait < wait {
		wait = *c.MaxWait
	}
	until := submitted.Add(wait)
	if !c.WaitEnd.IsZero() && c.WaitEnd.Before(until) {
		until = c.WaitEnd
	}
	return until
}

// start starts c, given its place and bytes.
func (b *ShadowBatch) start(c ShadowCall, share *hookShare) {
	now := time.Now()
	b.mu.Lock()
	id := b.nextID
	b.nextID++
	b.waits[id] = c.waitUntil(now)
	b.mu.Unlock()
	b.shadows.wg.Add(1)
	go b.shadows.run(shadowJob{call: c, batch: b, id: id, share: share, submitted: now})
}

func (s *Shadows) drop(c ShadowCall, why string) {
	s.metrics.shadowCall(c.Softened.Name, s.step, ShadowDropped)
	klog.V(2).InfoS("Softened webhook call not made", "webhook", c.Softened.Name, "configuration", c.Softened.Configuration, "reason", why)
}

// Drained refuses, counting them as dropped, the calls submitted once the server has
// drained its requests; the calls under way end on their own timeouts, and are logged.
func (s *Shadows) Drained() {
	s.mu.Lock()
	s.drained = true
	calls := 0
	for _, share := range s.shares {
		calls += share.calls
	}
	s.mu.Unlock()
	if calls > 0 {
		klog.InfoS("Softened webhook calls under way when the server drained: they end on their own timeouts", "step", s.step, "calls", calls)
	}
}

func shadowTimeout(t time.Duration) time.Duration {
	if t <= 0 {
		return shadowDefaultTimeout
	}
	return t
}

func (s *Shadows) run(job shadowJob) {
	defer s.wg.Done()
	c := job.call
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		job.share.calls--
		job.share.bytes -= c.Size
	}()
	timeout := shadowTimeout(c.Timeout)
	// A context of the call's own: the request's may be answered, and its warning recorder,
	// audit event and latency trackers gone, before the call returns.
	collector := &warningCollector{}
	ctx, cancel := context.WithTimeout(warning.WithWarningRecorder(context.Background(), collector), timeout)
	defer cancel()
	start := time.Now()
	result := ShadowResult{Softened: c.Softened, Index: c.Index}
	func() {
		defer func() {
			if r := recover(); r != nil {
				reason := fmt.Errorf("panicked: %v", r)
				if c.FailOpenOnPanic {
					result.Verdict = ShadowVerdict{FailedOpen: true, Reason: reason}
				} else {
					result.Verdict = ShadowVerdict{Outcome: OutcomeWouldFail, Reason: reason}
				}
			}
		}()
		result.Verdict = c.Do(ctx)
	}()
	result.Duration = time.Since(start)
	if !c.Deadline.IsZero() && result.Verdict.Outcome != OutcomeWouldFail && job.submitted.Add(result.Duration).After(c.Deadline) {
		// Enforced, the call would have begun when the request reached it and run on the
		// request's context: the request would have timed out, whatever the answer.
		result.Verdict = ShadowVerdict{Outcome: OutcomeWouldFail, Reason: fmt.Errorf("answered %v after the request reached it, past the request's deadline",
			result.Duration.Round(time.Millisecond))}
	}
	result.Warnings = collector.all()
	if c.Annotations != nil {
		result.Annotations = c.Annotations()
	}
	s.finish(job.batch, job.id, pendingResult{result: result, until: job.batch.until(job.id), arrived: time.Now(), maxWait: c.MaxWait})
}

// finish delivers a softened call's result to its batch (id -1: a verdict settled on the
// request path), and counts its outcome.
func (s *Shadows) finish(batch *ShadowBatch, id int, p pendingResult) {
	r := p.result
	if o := r.Verdict.Outcome; o != "" {
		s.metrics.WouldDeny(r.Softened.Name, s.step, r.Softened.Mode.Label, o)
	}
	if what, done := batch.deliver(id, p); done {
		s.account(r, what)
	}
}

// account counts and logs what became of a softened call's verdict.
func (s *Shadows) account(r ShadowResult, what string) {
	s.metrics.shadowCall(r.Softened.Name, s.step, what)
	if what == ShadowLate {
		klog.InfoS("Softened webhook answered after its request stopped waiting: its verdict is in the metric and this log only",
			"webhook", r.Softened.Name, "configuration", r.Softened.Configuration, "mode", r.Softened.Mode.Label,
			"duration", r.Duration.Round(time.Millisecond), "verdict", verdictOf(r.Verdict))
	}
	logShadow(r, what == ShadowInTime)
}

// verdictOf names a verdict for the log.
func verdictOf(v ShadowVerdict) string {
	switch {
	case v.Outcome != "":
		return v.Outcome
	case v.FailedOpen:
		return "failed_open"
	}
	return "admitted"
}

func logShadow(r ShadowResult, recorded bool) {
	v := r.Verdict
	keys := []any{"webhook", r.Softened.Name, "configuration", r.Softened.Configuration, "mode", r.Softened.Mode.Label, "recordedOnRequest", recorded}
	switch {
	case v.Outcome == OutcomeWouldFail:
		klog.InfoS("Softened webhook would fail the request if enforced", append(keys, "reason", fmt.Sprint(v.Reason))...)
	case v.Outcome == OutcomeWouldDeny:
		klog.InfoS("Softened webhook would deny the request if enforced", append(keys, "message", v.Message)...)
	case v.Outcome == OutcomeWouldPatch:
		klog.V(2).InfoS("Shadow webhook's patch not applied", append(keys, "paths", v.Paths)...)
	case v.FailedOpen:
		klog.InfoS("Softened webhook failed; it would fail open (failurePolicy Ignore) if enforced", append(keys, "reason", fmt.Sprint(v.Reason))...)
	}
}

// until is the time until which the request waits for call id's verdict.
func (b *ShadowBatch) until(id int) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waits[id]
}

// deliver hands a verdict to the batch. Once the batch is closed it says at once what became
// of it (done); until then it is pending, and closing the batch decides.
func (b *ShadowBatch) deliver(id int, p pendingResult) (what string, done bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waits, id)
	if b.closed {
		return b.unrecorded(p), true
	}
	b.pending = append(b.pending, p)
	close(b.changed)
	b.changed = make(chan struct{})
	return "", false
}

// unrecorded is what became of a verdict not recorded on its request. b.mu is held.
func (b *ShadowBatch) unrecorded(p pendingResult) string {
	switch {
	case b.refused:
		return ShadowRefused
	case p.async() || b.noWait:
		return ShadowAsync
	}
	return ShadowLate
}

// async: the request never waits for the verdict (maxWait 0s).
func (p pendingResult) async() bool { return p.maxWait != nil && *p.maxWait == 0 }

// Harvest waits for the batch's calls, each at most until its bound (see waitUntil) and
// while ctx lasts, then closes the batch and returns the verdicts that came within their
// bounds, in the chain's order, to be recorded on the request. Every verdict is counted.
func (b *ShadowBatch) Harvest(ctx context.Context) []ShadowResult {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	harvested := time.Now()
	b.mu.Lock()
	// A DeleteCollection waits in one admission run only (see waitedInEarlierRun).
	b.noWait = waitedInEarlierRun(ctx)
	waited := false
	for len(b.waits) > 0 && ctx.Err() == nil && !b.noWait {
		var until time.Time
		for _, u := range b.waits {
			if u.After(until) {
				until = u
			}
		}
		wait := time.Until(until)
		if b.shadows.awaitForTest {
			wait = time.Hour
		}
		if wait <= 0 {
			break
		}
		changed := b.changed
		waited = true
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		}
		b.mu.Lock()
	}
	b.closed = true
	if ctx.Err() != nil {
		// The request is over (its deadline, its client gone): nothing is recorded on it.
		b.refused = true
	}
	pending := b.pending
	b.pending = nil
	var results []ShadowResult
	whats := make([]string, len(pending))
	for i, p := range pending {
		// A verdict past its own bound is not recorded, even when the request waited for
		// another call: a webhook's record never depends on its neighbours'.
		if !b.refused && !p.async() && (p.until.IsZero() || !p.arrived.After(p.until) || b.shadows.awaitForTest) {
			whats[i] = ShadowInTime
			results = append(results, p.result)
		} else {
			whats[i] = b.unrecorded(p)
		}
	}
	b.mu.Unlock()
	for i, p := range pending {
		b.shadows.account(p.result, whats[i])
	}
	if waited {
		b.shadows.trackWait(ctx, b.started, harvested)
		markWaited(ctx)
	}
	// Few results: insertion sort keeps the chain's order.
	for i := 1; i < len(results); i++ {
		for j := i; j > 0 && results[j].Index < results[j-1].Index; j-- {
			results[j], results[j-1] = results[j-1], results[j]
		}
	}
	return results
}

// Refuse closes the batch of a request refused before its verdicts were recorded: it does
// not wait, and every verdict, in or to come, is counted as refused.
func (b *ShadowBatch) Refuse() {
	b.mu.Lock()
	b.closed, b.refused = true, true
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	for _, p := range pending {
		b.shadows.account(p.result, ShadowRefused)
	}
}

type warningCollector struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningCollector) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningCollector) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

// Record records a softened call's result on the request (ctx's warnings, attr's audit
// annotations) as its mode says, and returns the trace's verdict. What the client and the
// audit event see:
//   - Warn: a warning naming the webhook and the verdict (the denial's message for
//     would_deny, never a failure's reason, which goes to the log), and the webhook's own
//     warnings, as the client would get them once it is enforced;
//   - Audit: an annotation with the verdict (Metadata level; a patch's at Request level), and
//     the webhook's own audit annotations, as the audit event would get them once enforced.
//
// So Audit alone sends the client nothing, and Warn alone adds nothing to the audit event.
func (r ShadowResult) Record(ctx context.Context, attr admission.Attributes, prefix string) string {
	s, v := r.Softened, r.Verdict
	if s.Mode.Warn {
		for _, w := range r.Warnings {
			warning.AddWarning(ctx, "", w)
		}
	}
	if s.Mode.Audit {
		for k, val := range r.Annotations {
			if err := attr.AddAnnotation(k, val); err != nil {
				klog.FromContext(ctx).Error(err, "Recording a softened webhook's audit annotation failed", "webhook", s.Name, "key", k)
			}
		}
	}
	switch v.Outcome {
	case OutcomeWouldDeny:
		return s.deny(ctx, attr, prefix, v.Message)
	case OutcomeWouldFail:
		return s.fail(ctx, attr, prefix)
	case OutcomeWouldPatch:
		s.patch(ctx, attr, v.Patch, v.Paths)
		return fmt.Sprintf("would change, not applied (%s)", s.Mode.Label)
	}
	if v.FailedOpen {
		return fmt.Sprintf("failed, would fail open (%s)", s.Mode.Label)
	}
	return fmt.Sprintf("admitted, no change (%s)", s.Mode.Label)
}

// Own annotations of a webhook are keyed by its name; the copy of the attributes also
// holds what the dispatch's own annotator wrote there, which is not the webhook's.
func OwnAnnotations(name string, all map[string]string) map[string]string {
	own := map[string]string{}
	for k, v := range all {
		if strings.HasPrefix(k, name+"/") {
			own[k] = v
		}
	}
	return own
}

// objectsJSON is the JSON of attr's object and old object (nil when there is none).
func objectsJSON(attr *admission.VersionedAttributes, encoded *EncodedObjects) (obj, old []byte, err error) {
	if o := VersionedObject(attr); o != nil {
		if obj, err = encoded.JSON(o); err != nil {
			return nil, nil, err
		}
	}
	if o := VersionedOldObject(attr); o != nil {
		if old, err = encoded.JSON(o); err != nil {
			return nil, nil, err
		}
	}
	return obj, old, nil
}

// copyAttributes copies what a softened call needs of a call's attributes, whose objects'
// JSON is objJSON and oldJSON: the request's own change (later webhooks, conversion,
// storage) once the dispatch moves on.
func copyAttributes(in *admission.VersionedAttributes, objJSON, oldJSON []byte) (*admission.VersionedAttributes, *EncodedObjects) {
	var obj, old runtime.Object
	shadowEncoded := &EncodedObjects{}
	if o := VersionedObject(in); o != nil {
		obj = o.DeepCopyObject()
		shadowEncoded.seed(obj, objJSON)
	}
	if o := VersionedOldObject(in); o != nil {
		old = o.DeepCopyObject()
		shadowEncoded.seed(old, oldJSON)
	}
	var options runtime.Object
	if o := in.GetOperationOptions(); o != nil {
		options = o.DeepCopyObject()
	}
	record := admission.NewAttributesRecord(obj, old, in.GetKind(), in.GetNamespace(), in.GetName(), in.GetResource(), in.GetSubresource(),
		in.GetOperation(), options, in.IsDryRun(), in.GetUserInfo())
	return NewVersionedAttributes(record, obj, old, in.VersionedKind), shadowEncoded
}

// RecordedAnnotations are the annotations a copy of the attributes (SubmitCopy's) holds,
// at every level.
func RecordedAnnotations(attr *admission.VersionedAttributes) map[string]string {
	if g, ok := attr.Attributes.(admission.AnnotationsGetter); ok {
		return g.GetAnnotations(auditinternal.LevelRequestResponse)
	}
	return nil
}

// fail records that, enforced, the webhook would have refused the request for its failure.
// Neither the warning nor the annotation carries the failure's reason (which may name the
// webhook's URL): the log does.
func (s Softened) fail(ctx context.Context, attr admission.Attributes, prefix string) string {
	const msg = "its call failed; enforced, the request would be refused"
	if s.Mode.Warn {
		warning.AddWarning(ctx, "", fmt.Sprintf("%s would fail this request (enforcement mode %s): %s", s.Name, s.Mode.Label, msg))
	}
	if s.Mode.Audit {
		s.annotate(ctx, attr, prefix, wouldDenyRecord{Configuration: s.Configuration, Webhook: s.Name, Mode: s.Mode.Label, Outcome: OutcomeWouldFail, Message: msg}, auditinternal.LevelMetadata)
	}
	return fmt.Sprintf("would fail (%s)", s.Mode.Label)
}

// Classify says what the enforced dispatch would have done with a call's error (nil:
// admitted), for a webhook of failure policy ignore: upstream's dispatchers refuse the
// request for a denial, for a failed call under Fail, and for any other error whatever the
// policy (a patch that does not apply, a patch on an operation without an object, a dry run
// to a webhook with side effects, ...); they fail a failed call open under Ignore.
func Classify(name string, err error, ignore bool) ShadowVerdict {
	if err == nil {
		return ShadowVerdict{}
	}
	var callErr *webhookutil.ErrCallingWebhook
	if errors.As(err, &callErr) {
		if ignore {
			return ShadowVerdict{FailedOpen: true, Reason: callErr}
		}
		return ShadowVerdict{Outcome: OutcomeWouldFail, Reason: err}
	}
	var rejection *webhookutil.ErrWebhookRejection
	if errors.As(err, &rejection) {
		msg := rejection.Status.ErrStatus.Message
		msg = strings.TrimPrefix(msg, fmt.Sprintf("admission webhook %q denied the request: ", name))
		return ShadowVerdict{Outcome: OutcomeWouldDeny, Message: msg}
	}
	return ShadowVerdict{Outcome: OutcomeWouldFail, Reason: err}
}

// mutatingStep is the step type of the mutating plugin's pool.
const mutatingStep = "admit"

// trackWait adds the request's wait for its softened verdicts to upstream's webhook latency
// trackers, where the calls' own time would be enforced, so that the server's SLI latency
// leaves it out as it leaves out an enforced webhook's: a mutating wait (at the chain's end)
// is added to the mutating webhooks' sum; a validating dispatch, whose calls run in parallel,
// took from its start to the harvest's end.
func (s *Shadows) trackWait(ctx context.Context, dispatchStarted, harvested time.Time) {
	trackers, ok := endpointsrequest.LatencyTrackersFrom(ctx)
	if !ok {
		return
	}
	if s.step == mutatingStep {
		trackers.MutatingWebhookTracker.TrackDuration(time.Since(harvested))
		return
	}
	trackers.ValidatingWebhookTracker.TrackDuration(time.Since(dispatchStarted))
}
