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
// Untraced requests pay one check of the request's dry-run flag per plugin (onRequest) and
// nothing else.
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
	// trace.admission.portcullis.io/<phase>-<step>.
	AuditAnnotationPrefix = "trace.admission.portcullis.io/"
	// WarningPrefix starts every warning of the trace.
	WarningPrefix = "admission trace: "

	// contextKey is where a request's Recorder sits in its reinvocation context, which lives
	// as long as the request's admission attributes.
	contextKey = "portcullis.io/admission-trace"
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

// Recorder is one request's trace. Steps of one phase are recorded one after another (the
// chain calls plugins in turn); the sub-steps of one plugin (webhooks called in parallel)
// may be recorded concurrently.
type Recorder struct {
	warn, audit bool

	mu sync.Mutex
	// step is the current plugin step of each phase, sub its sub-steps so far.
	step [2]int
	sub  [2]int
	// quiet are plugin steps not yet warned of that admitted and changed nothing: they go
	// out together, on one line, before the next step of their phase that did something or
	// after the phase's last.
	quiet [2]*quietRun
	// warned counts the runes of the trace's warnings; once the next would pass
	// warningBudget, one line says the rest is not shown, and no more follow.
	warned int
	cut    bool

	// object is the request's object, in JSON, as the last mutating step left it. Mutating
	// steps run one after another, in the chain's goroutine.
	object []byte
}

// warningBudget leaves room, within the 4 KiB of warnings a response carries before upstream
// drops them, for the warnings of the request's webhooks and plugins.
const warningBudget = 3584

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

func newRecorder(warn, audit bool) *Recorder {
	return &Recorder{warn: warn, audit: audit}
}

// begin starts the next plugin step of phase and returns its number.
func (r *Recorder) begin(phase Phase) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step[phase]++
	r.sub[phase] = 0
	return r.step[phase]
}

// Step is what one step did.
type Step struct {
	// Name names the step: a plugin's name, or "webhook <name> (<configuration>)".
	Name string
	// Verdict is "admitted", "denied (403): …", "error: …", or a mode's outcome.
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
	r.sub[phase]++
	id := fmt.Sprintf("%d.%d", r.step[phase], r.sub[phase])
	r.annotate(ctx, a, phase, id, s)
	if r.warn {
		r.flushQuiet(ctx, phase)
		r.warnLine(ctx, fmt.Sprintf("%s%s %s %s", WarningPrefix, phase, id, s))
	}
}

// end records a plugin step begun with begin; last says no later plugin of the phase takes
// the request.
func (r *Recorder) end(ctx context.Context, a admission.Attributes, phase Phase, step int, s Step, last bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.annotate(ctx, a, phase, strconv.Itoa(step), s)
	if !r.warn {
		return
	}
	if s.quiet() {
		if run := r.quiet[phase]; run != nil && (run.runes+len(s.Name)+14 > maxQuietLine || run.reinvoked != s.Reinvoked) {
			r.flushQuiet(ctx, phase)
		}
		run := r.quiet[phase]
		if run == nil {
			run = &quietRun{first: step, reinvoked: s.Reinvoked, runes: len(WarningPrefix) + 64}
			r.quiet[phase] = run
		}
		run.last = step
		run.runes += len(s.Name) + 14
		run.steps = append(run.steps, s)
	} else {
		r.flushQuiet(ctx, phase)
		r.warnLine(ctx, fmt.Sprintf("%s%s %d %s", WarningPrefix, phase, step, s))
	}
	if last {
		r.flushQuiet(ctx, phase)
	}
}

// flushQuiet warns of the quiet steps of phase not yet warned of: one step as any other, a
// run of them on one line.
func (r *Recorder) flushQuiet(ctx context.Context, phase Phase) {
	run := r.quiet[phase]
	if run == nil {
		return
	}
	r.quiet[phase] = nil
	if run.first == run.last {
		r.warnLine(ctx, fmt.Sprintf("%s%s %d %s", WarningPrefix, phase, run.first, run.steps[0]))
		return
	}
	names := make([]string, len(run.steps))
	for i, s := range run.steps {
		names[i] = fmt.Sprintf("%s (%s)", s.Name, shortDuration(s.Duration))
	}
	again := ""
	if run.reinvoked {
		again = " (reinvoked)"
	}
	r.warnLine(ctx, fmt.Sprintf("%s%s %d-%d %s, no change%s: %s", WarningPrefix, phase, run.first, run.last, admitted, again, strings.Join(names, ", ")))
}

func (r *Recorder) warnLine(ctx context.Context, line string) {
	if r.cut {
		return
	}
	n := utf8.RuneCountInString(line)
	if r.warned+n > warningBudget {
		r.cut = true
		line = WarningPrefix + "the steps that follow are not shown: a response's warnings are limited to 4 KiB; admissionTrace.audit records every step"
	}
	r.warned += n
	warning.AddWarning(ctx, "", line)
}

// annotate records a step in the audit event, one annotation per step.
func (r *Recorder) annotate(ctx context.Context, a admission.Attributes, phase Phase, id string, s Step) {
	if !r.audit {
		return
	}
	key := AuditAnnotationPrefix + phase.String() + "-" + strings.ReplaceAll(id, ".", "-")
	if err := a.AddAnnotation(key, s.String()); err != nil {
		klog.FromContext(ctx).Error(err, "Recording an admission trace step in the audit event failed", "step", key)
	}
}

// String is the step on one line: name, verdict, changed paths, duration.
func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	if s.Reinvoked {
		b.WriteString(" (reinvoked)")
	}
	b.WriteString(": ")
	b.WriteString(enforcement.OneLine(s.Verdict))
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
