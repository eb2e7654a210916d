// Package trace records what each step of a request's admission did: every plugin of the
// chain, built-in or ours, in order, and, through Portcullis's webhook dispatch, every
// webhook — with the JSON patch paths it changed, its verdict and its duration. It is an
// admission decorator (Decorator) around every plugin, turned on by the admission config
// file's Portcullis entry (admissionTrace):
//
//   - onRequest: a dry-run request whose object carries the annotation
//     admission.portcullis.io/trace: "true", from a user the server's authorizer allows to
//     "trace" the request's resource, gets each step back as a warning;
//   - audit: every request's steps are recorded in its audit event, one annotation per step.
//
// A trace is the HTTP request's, not one admission attributes record's: the server's handler
// chain gives each request its state (WithRequestHandler), so the authorizer is asked once,
// the warnings share one budget within what a response carries, and the admission runs of an
// update or patch the server retries after a conflict are numbered attempts of one trace.
// What a client sees is names, verdicts and changed paths; the reasons behind a verdict
// (messages, webhook URLs, errors) go to the log (-v=2) and to the audit event at Request
// level.
//
// Untraced requests pay one check of the request's dry-run flag per plugin (onRequest), and
// the request state (one allocation) when the trace is on, and nothing else.
package trace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
)

const (
	// Annotation on a dry-run request's object asks for the trace.
	Annotation = "admission.portcullis.io/trace"
	// Verb is what a user must be allowed on the request's resource to get the trace.
	Verb = "trace"
	// AuditAnnotationPrefix prefixes the audit annotation of each step:
	// trace.admission.portcullis.io/<phase>-<step> in the first attempt,
	// trace.admission.portcullis.io/attempt-<n>-<phase>-<step> in the n-th. A step whose
	// verdict has a reason has it at Request level under the same key and ReasonSuffix.
	AuditAnnotationPrefix = "trace.admission.portcullis.io/"
	// ReasonSuffix ends the key of a step's reason in the audit event.
	ReasonSuffix = "-reason"
	// WarningPrefix starts every warning of the trace.
	WarningPrefix = "admission trace: "

	// contextKey is where a record's Recorder sits in the record's reinvocation context, for
	// the webhook dispatch (From).
	contextKey = "portcullis.io/admission-trace"
	// runKey is where a record's admission run sits in the record's reinvocation context:
	// the run lives as long as its record, and the request's trace holds none of them.
	runKey = "portcullis.io/admission-trace-run"
	// maxAttempts bounds the attempts traced: a collection's delete admits each of its
	// objects (one attempt each), which with audit would put thousands of steps in one
	// audit event.
	maxAttempts = 3
	// maxPaths bounds the paths listed for one step, so that a trace fits the response's
	// warning budget (4 KiB before upstream truncates each warning).
	maxPaths = 8
)

// Phase is a phase of admission.
type Phase int

const (
	Mutating Phase = iota
	Validating
)

func (p Phase) String() string {
	if p == Mutating {
		return "mutating"
	}
	return "validating"
}

// Recorder is one request's trace. Steps of one admission run are recorded one after another
// (the chain calls plugins in turn); the sub-steps of one plugin (webhooks called in
// parallel) may be recorded concurrently, and so may the runs of a collection's objects.
type Recorder struct {
	warn, audit bool
	// request is the request's state: what its response's warnings weigh so far.
	request *requestState

	mu sync.Mutex
	// attempts counts the request's attempts: a mutating run and the validating run that
	// follows it, or a validating run alone. open says the last attempt's validating run
	// has not begun.
	attempts int
	open     bool
	// cut says the warnings reached the budget: one line said the rest is not shown.
	cut bool
}

// admissionRun is one admission run of a request: the plugins of its phases on one
// attributes record.
type admissionRun struct {
	attempt int
	// untraced: an attempt past maxAttempts, of which nothing is recorded.
	untraced bool
	// step is the current plugin step of each phase, sub its sub-steps so far.
	step [2]int
	sub  [2]int
	// quiet are plugin steps not yet warned of that admitted and changed nothing: they go
	// out together, on one line, before the next step of their phase that did something or
	// after the phase's last.
	quiet [2]*quietRun
	// object is the request's object, in JSON, as the run's last mutating step left it.
	// Mutating steps run one after another, in the chain's goroutine.
	object []byte
}

// Budget of the trace's warnings. Upstream truncates every warning of a response once they
// pass warningLimit runes together, and drops the ones after; the trace stops where the
// response's warnings so far, its own and everyone else's, leave warningReserve for the
// warnings still to come (webhooks' and plugins' own, after the trace's lines).
const (
	warningLimit   = 4096
	warningReserve = 1024
)

// cutLine ends a trace that reached the budget.
const cutLine = WarningPrefix + "the steps that follow are not shown: a response's warnings are limited to 4 KiB; admissionTrace.audit records every step"

// quietRun is consecutive plugin steps that admitted and changed nothing.
type quietRun struct {
	first, last int
	reinvoked   bool
	steps       []Step
	// runes estimates the length of the run's line.
	runes int
}

// maxQuietLine keeps a run's line under the 256 runes to which upstream truncates each
// warning once a response's warnings pass 4 KiB.
const maxQuietLine = 240

// From returns the trace of the request whose attributes a are, or nil when the request is
// not traced. The webhook dispatch records its webhooks through it.
func From(a admission.Attributes) *Recorder {
	r, _ := a.GetReinvocationContext().Value(contextKey).(*Recorder)
	return r
}

func newRecorder(q *requestState, warn, audit bool) *Recorder {
	return &Recorder{request: q, warn: warn, audit: audit}
}

// runOf returns a's run, beginning it (and, when it starts a new attempt, the attempt) if
// it is new. r.mu is held.
func (r *Recorder) runOf(ctx context.Context, a admission.Attributes, phase Phase) *admissionRun {
	rc := a.GetReinvocationContext()
	ru, _ := rc.Value(runKey).(*admissionRun)
	switch {
	case ru == nil:
		ru = &admissionRun{}
		if phase == Validating && r.open {
			// The validation of the attempt whose mutation ran.
			ru.attempt = r.attempts
		} else {
			r.attempts++
			ru.attempt = r.attempts
			switch {
			case ru.attempt > maxAttempts+1:
			case ru.attempt == maxAttempts+1:
				if r.warn {
					r.warnLine(ctx, fmt.Sprintf("%sadmission runs again: the attempts after the %dth are not traced", WarningPrefix, maxAttempts))
				}
				if r.audit {
					if err := a.AddAnnotation(AuditAnnotationPrefix+"untraced-attempts", fmt.Sprintf("the attempts after the %dth are not traced", maxAttempts)); err != nil {
						klog.FromContext(ctx).Error(err, "Recording an admission trace step in the audit event failed")
					}
				}
			case ru.attempt > 1 && r.warn:
				r.warnLine(ctx, fmt.Sprintf("%sattempt %d: admission runs again (a write the server retries, a delete's second check, or a collection's next object)", WarningPrefix, ru.attempt))
			}
		}
		ru.untraced = ru.attempt > maxAttempts
		r.open = phase == Mutating
		rc.SetValue(runKey, ru)
		// For the webhook dispatch; written once, before any of the record's plugins runs.
		rc.SetValue(contextKey, r)
	case phase == Validating && r.open && ru.attempt == r.attempts:
		// One record for both phases.
		r.open = false
	}
	return ru
}

// begin starts the next plugin step of phase on a's run and returns the run and the step's
// number.
func (r *Recorder) begin(ctx context.Context, a admission.Attributes, phase Phase) (*admissionRun, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.runOf(ctx, a, phase)
	ru.step[phase]++
	ru.sub[phase] = 0
	return ru, ru.step[phase]
}

// Step is what one step did.
type Step struct {
	// Name names the step: a plugin's name, or "webhook <name> (<configuration>)".
	Name string
	// Verdict is "admitted", "denied (403): …", "error: …", or a mode's outcome: what the
	// step decided, then, after ": ", why. Clients see what it decided; the reason goes to
	// the log and to the audit event at Request level.
	Verdict string
	// Paths are the JSON patch paths the step changed in the object.
	Paths []string
	// Duration is the step's.
	Duration time.Duration
	// Reinvoked: the plugin runs again because a later one changed the object
	// (reinvocationPolicy IfNeeded).
	Reinvoked bool
}

// quiet says whether a step admitted and changed nothing.
func (s Step) quiet() bool { return s.Verdict == admitted && len(s.Paths) == 0 }

const admitted = "admitted"

// Sub records a sub-step of the plugin step under way in phase: one webhook's call.
func (r *Recorder) Sub(ctx context.Context, a admission.Attributes, phase Phase, s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.runOf(ctx, a, phase)
	if ru.untraced {
		return
	}
	ru.sub[phase]++
	id := fmt.Sprintf("%d.%d", ru.step[phase], ru.sub[phase])
	r.annotate(ctx, a, ru, phase, id, s)
	if r.warn {
		r.flushQuiet(ctx, ru, phase)
		r.warnLine(ctx, fmt.Sprintf("%s%s%s %s %s", WarningPrefix, ru.label(), phase, id, s))
	}
}

// label starts the warnings of an attempt after the first.
func (ru *admissionRun) label() string {
	if ru.attempt <= 1 {
		return ""
	}
	return fmt.Sprintf("attempt %d: ", ru.attempt)
}

// end records a plugin step begun with begin; last says no later plugin of the phase takes
// the request.
func (r *Recorder) end(ctx context.Context, a admission.Attributes, ru *admissionRun, phase Phase, step int, s Step, last bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ru.untraced {
		return
	}
	r.annotate(ctx, a, ru, phase, strconv.Itoa(step), s)
	if !r.warn {
		return
	}
	if s.quiet() {
		if q := ru.quiet[phase]; q != nil && (q.runes+len(s.Name)+14 > maxQuietLine || q.reinvoked != s.Reinvoked) {
			r.flushQuiet(ctx, ru, phase)
		}
		q := ru.quiet[phase]
		if q == nil {
			q = &quietRun{first: step, reinvoked: s.Reinvoked, runes: len(WarningPrefix) + len(ru.label()) + 64}
			ru.quiet[phase] = q
		}
		q.last = step
		q.runes += len(s.Name) + 14
		q.steps = append(q.steps, s)
	} else {
		r.flushQuiet(ctx, ru, phase)
		r.warnLine(ctx, fmt.Sprintf("%s%s%s %d %s", WarningPrefix, ru.label(), phase, step, s))
	}
	if last {
		r.flushQuiet(ctx, ru, phase)
	}
}

// flushQuiet warns of the quiet steps of phase not yet warned of: one step as any other, a
// run of them on one line.
func (r *Recorder) flushQuiet(ctx context.Context, ru *admissionRun, phase Phase) {
	q := ru.quiet[phase]
	if q == nil {
		return
	}
	ru.quiet[phase] = nil
	if q.first == q.last {
		r.warnLine(ctx, fmt.Sprintf("%s%s%s %d %s", WarningPrefix, ru.label(), phase, q.first, q.steps[0]))
		return
	}
	names := make([]string, len(q.steps))
	for i, s := range q.steps {
		names[i] = fmt.Sprintf("%s (%s)", s.Name, shortDuration(s.Duration))
	}
	again := ""
	if q.reinvoked {
		again = " (reinvoked)"
	}
	r.warnLine(ctx, fmt.Sprintf("%s%s%s %d-%d %s, no change%s: %s", WarningPrefix, ru.label(), phase, q.first, q.last, admitted, again, strings.Join(names, ", ")))
}

// warnLine adds line to the response's warnings while the response's warnings so far, the
// line and the cut line leave the reserve; otherwise the cut line, once, while it fits
// within upstream's limit.
func (r *Recorder) warnLine(ctx context.Context, line string) {
	if r.cut {
		return
	}
	written := int(r.request.written.Load())
	cut := utf8.RuneCountInString(cutLine)
	if written+utf8.RuneCountInString(line)+cut <= warningLimit-warningReserve {
		warning.AddWarning(ctx, "", line)
		return
	}
	r.cut = true
	if written+cut <= warningLimit {
		warning.AddWarning(ctx, "", cutLine)
	}
}

// annotate records a step in the audit event, one annotation per step at Metadata level, its
// reason under a key of its own at Request level; the reason goes to the log too.
func (r *Recorder) annotate(ctx context.Context, a admission.Attributes, ru *admissionRun, phase Phase, id string, s Step) {
	reason := s.reason()
	if reason != "" {
		klog.FromContext(ctx).V(2).Info("Admission trace step", "attempt", ru.attempt, "phase", phase.String(), "step", id, "name", s.Name, "verdict", s.Verdict)
	}
	if !r.audit {
		return
	}
	key := AuditAnnotationPrefix
	if ru.attempt > 1 {
		key += "attempt-" + strconv.Itoa(ru.attempt) + "-"
	}
	key += phase.String() + "-" + strings.ReplaceAll(id, ".", "-")
	if err := a.AddAnnotation(key, s.String()); err != nil {
		klog.FromContext(ctx).Error(err, "Recording an admission trace step in the audit event failed", "step", key)
	}
	if reason != "" {
		if err := a.AddAnnotationWithLevel(key+ReasonSuffix, enforcement.OneLine(reason), auditinternal.LevelRequest); err != nil {
			klog.FromContext(ctx).Error(err, "Recording an admission trace step in the audit event failed", "step", key+ReasonSuffix)
		}
	}
}

// decision is what the step decided: its verdict up to the reason.
func (s Step) decision() string {
	if i := strings.Index(s.Verdict, ": "); i >= 0 {
		return s.Verdict[:i]
	}
	return s.Verdict
}

// reason is why, after the decision; "" for none.
func (s Step) reason() string {
	if i := strings.Index(s.Verdict, ": "); i >= 0 {
		return s.Verdict[i+2:]
	}
	return ""
}

// String is the step on one line, as clients see it: name, decision, changed paths,
// duration.
func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	if s.Reinvoked {
		b.WriteString(" (reinvoked)")
	}
	b.WriteString(": ")
	b.WriteString(enforcement.OneLine(s.decision()))
	if len(s.Paths) > 0 {
		b.WriteString(", changed ")
		shown := s.Paths
		if len(shown) > maxPaths {
			shown = shown[:maxPaths]
		}
		b.WriteString(strings.Join(shown, " "))
		if more := len(s.Paths) - len(shown); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
	}
	fmt.Fprintf(&b, " (%s)", shortDuration(s.Duration))
	return b.String()
}

// shortDuration keeps three or four figures: enough to compare steps.
func shortDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}
