package trace

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// labeller is a mutating plugin that labels pods, and calls sub for its sub-steps.
type labeller struct {
	*admission.Handler
	sub func(ctx context.Context, a admission.Attributes)
}

func (l *labeller) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := a.GetObject().(*api.Pod)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["team"] = "a"
	pod.Spec.PriorityClassName = "high"
	if l.sub != nil {
		l.sub(ctx, a)
	}
	return nil
}

// denier is a validating plugin returning err.
type denier struct {
	*admission.Handler
	err error
}

func (d *denier) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return d.err
}

// both mutates nothing and validates everything.
type both struct{ *admission.Handler }

func (both) Admit(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}
func (both) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// recorded holds a request's warnings and audit annotations. Like the request's audit event,
// it keeps the first value of a key and counts the attempts to set another.
type recorded struct {
	mu          sync.Mutex
	warnings    []string
	annotations map[string]string
	levels      map[string]auditinternal.Level
	collisions  []string
}

func (r *recorded) AddWarning(_, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

type annotatedAttributes struct {
	admission.Attributes
	r *recorded
}

func (a annotatedAttributes) AddAnnotation(k, v string) error {
	return a.AddAnnotationWithLevel(k, v, auditinternal.LevelMetadata)
}

func (a annotatedAttributes) AddAnnotationWithLevel(k, v string, level auditinternal.Level) error {
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	if old, ok := a.r.annotations[k]; ok && old != v {
		a.r.collisions = append(a.r.collisions, k)
		return nil
	}
	if a.r.annotations == nil {
		a.r.annotations, a.r.levels = map[string]string{}, map[string]auditinternal.Level{}
	}
	if a.r.levels == nil {
		a.r.levels = map[string]auditinternal.Level{}
	}
	a.r.annotations[k], a.r.levels[k] = v, level
	return nil
}

// request is a pod create by user, dry run or not, asking for the trace or not.
func request(dryRun, asked bool, r *recorded) admission.Attributes {
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if asked {
		pod.Annotations = map[string]string{Annotation: "true"}
	}
	return record(pod, dryRun, r)
}

// record is a new attributes record of a pod create, as upstream makes one per phase and per
// attempt.
func record(pod *api.Pod, dryRun bool, r *recorded) admission.Attributes {
	a := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", "p", api.Resource("pods").WithVersion("v1"), "",
		admission.Create, &metav1.CreateOptions{}, dryRun, &user.DefaultInfo{Name: "alice"})
	if r == nil {
		return a
	}
	return annotatedAttributes{Attributes: a, r: r}
}

// requestContext is a request's context as the server's handler chain makes it: its
// warnings go to r, and it has the trace's state.
func requestContext(r warning.Recorder) context.Context {
	return WithRequest(warning.WithWarningRecorder(context.Background(), r))
}

// onlyAlice lets alice trace pods.
var onlyAlice = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "alice" && a.GetVerb() == Verb && a.GetResource() == "pods" && a.GetNamespace() == "ns" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC rule allows it", nil
})

var objectInterfaces = admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)

// chain is a decorated chain of a labeller, a plugin of both phases and a denier.
func chain(d *Decorator, deny error) admission.Interface {
	handlers := []admission.Interface{
		d.Decorate(&labeller{Handler: admission.NewHandler(admission.Create), sub: func(ctx context.Context, a admission.Attributes) {
			if r := From(a); r != nil {
				r.Sub(ctx, a, Mutating, Step{Name: "webhook w.example.com (c)", Verdict: "admitted", Paths: []string{"/x"}})
			}
		}}, "Labeller"),
		d.Decorate(both{admission.NewHandler(admission.Create)}, "Both"),
		d.Decorate(&denier{Handler: admission.NewHandler(admission.Create), err: deny}, "Denier"),
	}
	return admission.NewChainHandler(handlers...)
}

// run admits a through c, then validates the object on a new record, as the server does,
// in one request's context.
func run(c admission.Interface, a admission.Attributes, r *recorded) error {
	return runIn(requestContext(r), c, a, r)
}

func runIn(ctx context.Context, c admission.Interface, a admission.Attributes, r *recorded) error {
	if err := c.(admission.MutationInterface).Admit(ctx, a, objectInterfaces); err != nil {
		return err
	}
	return c.(admission.ValidationInterface).Validate(ctx, record(a.GetObject().(*api.Pod), a.IsDryRun(), r), objectInterfaces)
}

func TestDecorateKeepsPhases(t *testing.T) {
	d := New(true, false)
	for _, tc := range []struct {
		name               string
		plugin             admission.Interface
		mutates, validates bool
	}{
		{name: "mutating", plugin: &labeller{Handler: admission.NewHandler(admission.Create)}, mutates: true},
		{name: "validating", plugin: &denier{Handler: admission.NewHandler(admission.Create)}, validates: true},
		{name: "both", plugin: both{admission.NewHandler(admission.Create)}, mutates: true, validates: true},
	} {
		got := d.Decorate(tc.plugin, tc.name)
		_, mutates := got.(admission.MutationInterface)
		_, validates := got.(admission.ValidationInterface)
		if mutates != tc.mutates || validates != tc.validates {
			t.Errorf("%s: decorated mutates %v, validates %v; want %v, %v", tc.name, mutates, validates, tc.mutates, tc.validates)
		}
		if !got.Handles(admission.Create) || got.Handles(admission.Delete) {
			t.Errorf("%s: the plugin's Handles is not kept", tc.name)
		}
	}
	if got := (*Decorator)(nil).Decorate(both{}, "x"); got != (both{}) {
		t.Errorf("a nil decorator wrapped the plugin")
	}
	if New(false, false) != nil {
		t.Errorf("New with both off is not nil")
	}
}

// traceLine matches one warning of the trace, with any duration.
func traceLine(s string) *regexp.Regexp {
	return regexp.MustCompile("^" + regexp.QuoteMeta(WarningPrefix+s) + ` \([0-9.]+[nµm]?s\)$`)
}

func TestTrace(t *testing.T) {
	forbidden := apierrors.NewForbidden(api.Resource("pods"), "p", errNoReason)
	tests := []struct {
		name             string
		onRequest, audit bool
		dryRun, asked    bool
		deny             error
		want             []*regexp.Regexp
		wantExactly      []string
		wantAnnotations  []string
	}{
		{name: "asked, allowed", onRequest: true, dryRun: true, asked: true, deny: forbidden, want: []*regexp.Regexp{
			traceLine("mutating 1.1 webhook w.example.com (c): admitted, changed /x"),
			traceLine("mutating 1 Labeller: admitted, changed /metadata/labels /spec/priorityClassName"),
			traceLine("mutating 2 Both: admitted"),
			traceLine("validating 1 Both: admitted"),
			traceLine(`validating 2 Denier: denied (403)`),
		}},
		{name: "asked, not allowed", onRequest: true, dryRun: true, asked: true,
			wantExactly: []string{WarningPrefix + `not returned: user "alice" may not trace pods in namespace ns`}},
		{name: "not a dry run", onRequest: true, asked: true},
		{name: "not asked", onRequest: true, dryRun: true},
		{name: "audit", audit: true, deny: forbidden, wantAnnotations: []string{"mutating-1", "mutating-1-1", "mutating-2", "validating-1", "validating-2", "validating-2" + ReasonSuffix}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := New(tc.onRequest, tc.audit)
			authz := onlyAlice
			if tc.name == "asked, not allowed" {
				authz = func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
					return authorizer.DecisionDeny, "no RBAC rule allows it", nil
				}
			}
			d.SetAuthorizer(authz)
			r := &recorded{annotations: map[string]string{}}
			err := run(chain(d, tc.deny), request(tc.dryRun, tc.asked, r), r)
			if (err != nil) != (tc.deny != nil) {
				t.Fatalf("error %v, want %v", err, tc.deny)
			}
			switch {
			case tc.want != nil:
				if len(r.warnings) != len(tc.want) {
					t.Fatalf("warnings:\n%s\nwant %d", strings.Join(r.warnings, "\n"), len(tc.want))
				}
				for i, w := range tc.want {
					if !w.MatchString(r.warnings[i]) {
						t.Errorf("warning %d: %q does not match %s", i, r.warnings[i], w)
					}
				}
			case strings.Join(r.warnings, "\n") != strings.Join(tc.wantExactly, "\n"):
				t.Errorf("warnings %q, want %q", r.warnings, tc.wantExactly)
			}
			if len(r.annotations) != len(tc.wantAnnotations) {
				t.Errorf("annotations %v, want %v", r.annotations, tc.wantAnnotations)
			}
			for _, key := range tc.wantAnnotations {
				if _, ok := r.annotations[AuditAnnotationPrefix+key]; !ok {
					t.Errorf("annotation %s missing: %v", AuditAnnotationPrefix+key, r.annotations)
				}
			}
		})
	}
}

var errNoReason = errorString("no reason")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestUntracedAllocatesNothing: a request not traced costs no allocation in the decorator
// (the benchmark measures its time).
func TestUntracedAllocatesNothing(t *testing.T) {
	plugin := both{admission.NewHandler(admission.Create)}
	d := New(true, false)
	d.SetAuthorizer(onlyAlice)
	decorated := d.Decorate(plugin, "Both")
	for _, tc := range []struct {
		name   string
		dryRun bool
	}{{name: "not a dry run"}, {name: "dry run, not asked", dryRun: true}} {
		a := request(tc.dryRun, false, nil)
		ctx := requestContext(discard{})
		allocs := testing.AllocsPerRun(100, func() {
			_ = decorated.(admission.MutationInterface).Admit(ctx, a, objectInterfaces)
			_ = decorated.(admission.ValidationInterface).Validate(ctx, a, objectInterfaces)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per request, want 0", tc.name, allocs)
		}
	}
}

// BenchmarkTrace measures one plugin of both phases per request (Admit, then Validate):
// undecorated; decorated with the trace on request, for a request that does not ask for it
// (the cost when off: goal ≤ 50 ns and 0 allocations beyond undecorated, make bench's table
// 4); and for a dry run that asks for it and is allowed: the trace of the plugin that labels
// the pod (two serializations of the pod and a diff), beyond making the request alone.
func BenchmarkTrace(b *testing.B) {
	d := New(true, false)
	d.SetAuthorizer(onlyAlice)
	both := both{admission.NewHandler(admission.Create)}
	labelling := &labellingBoth{labeller: labeller{Handler: admission.NewHandler(admission.Create)}}
	for _, bc := range []struct {
		name          string
		handler       admission.Interface
		dryRun, asked bool
		// fresh makes a new request (record and context) per operation, as a traced
		// request's steps are kept in its state.
		fresh bool
	}{
		{name: "undecorated", handler: both},
		{name: "ignored-not-dry-run", handler: d.Decorate(both, "Both")},
		{name: "ignored-dry-run-not-asking", handler: d.Decorate(both, "Both"), dryRun: true},
		{name: "request-alone", handler: both, dryRun: true, asked: true, fresh: true},
		{name: "checked-traced", handler: d.Decorate(labelling, "Labelling"), dryRun: true, asked: true, fresh: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a := request(bc.dryRun, bc.asked, nil)
			ctx := requestContext(discard{})
			mutator, validator := bc.handler.(admission.MutationInterface), bc.handler.(admission.ValidationInterface)
			b.ReportAllocs()
			for b.Loop() {
				if bc.fresh {
					a, ctx = request(bc.dryRun, bc.asked, nil), requestContext(discard{})
				}
				_ = mutator.Admit(ctx, a, objectInterfaces)
				_ = validator.Validate(ctx, a, objectInterfaces)
			}
		})
	}
}

// labellingBoth labels pods and validates them.
type labellingBoth struct{ labeller }

func (*labellingBoth) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// discard drops warnings.
type discard struct{}

func (discard) AddWarning(string, string) {}

// quietPlugin admits and changes nothing; it takes only the operations it is given.
type quietPlugin struct{ *admission.Handler }

func (quietPlugin) Admit(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return nil
}

// TestQuietStepsShareALine: plugin steps that admit and change nothing are warned of
// together, on one line, before the next step that did something and after the last plugin
// that takes the request; the audit event still has one annotation per step.
func TestQuietStepsShareALine(t *testing.T) {
	d := New(true, true)
	d.SetAuthorizer(onlyAlice)
	quiet := func(name string, ops ...admission.Operation) admission.Interface {
		return d.Decorate(quietPlugin{admission.NewHandler(ops...)}, name)
	}
	c := admission.NewChainHandler(
		quiet("Q1", admission.Create), quiet("Q2", admission.Create),
		d.Decorate(&labeller{Handler: admission.NewHandler(admission.Create)}, "Labeller"),
		quiet("Q3", admission.Create), quiet("Q4", admission.Create),
		quiet("DeleteOnly", admission.Delete),
	)
	r := &recorded{annotations: map[string]string{}}
	ctx := requestContext(r)
	if err := c.Admit(ctx, request(true, true, r), objectInterfaces); err != nil {
		t.Fatal(err)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^admission trace: mutating 1-2 admitted, no change: Q1 \([0-9.]+[nµm]?s\), Q2 \([0-9.]+[nµm]?s\)$`),
		traceLine("mutating 3 Labeller: admitted, changed /metadata/labels /spec/priorityClassName"),
		regexp.MustCompile(`^admission trace: mutating 4-5 admitted, no change: Q3 \([0-9.]+[nµm]?s\), Q4 \([0-9.]+[nµm]?s\)$`),
	}
	if len(r.warnings) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(r.warnings, "\n"), len(want))
	}
	for i, w := range want {
		if !w.MatchString(r.warnings[i]) {
			t.Errorf("warning %d: %q does not match %s", i, r.warnings[i], w)
		}
	}
	if len(r.annotations) != 5 {
		t.Errorf("annotations %v, want one per step", r.annotations)
	}
}

// TestWarningBudget: a trace longer than the budget ends with one line saying the rest is
// not shown, within the budget.
func TestWarningBudget(t *testing.T) {
	d := New(true, false)
	d.SetAuthorizer(onlyAlice)
	var handlers []admission.Interface
	for i := range 100 {
		handlers = append(handlers, d.Decorate(&numberer{Handler: admission.NewHandler(admission.Create), n: i}, fmt.Sprintf("Numberer%d", i)))
	}
	r := &recorded{}
	ctx := requestContext(r)
	if err := admission.NewChainHandler(handlers...).Admit(ctx, request(true, true, nil), objectInterfaces); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, w := range r.warnings {
		total += len([]rune(w))
	}
	last := r.warnings[len(r.warnings)-1]
	if total > 4096 || !strings.HasPrefix(last, WarningPrefix+"the steps that follow are not shown") || len(r.warnings) >= 100 {
		t.Errorf("%d warnings of %d runes ending %q; want fewer than the 100 steps, within 4 KiB, ending with the cut", len(r.warnings), total, last)
	}
}

// numberer labels a pod with its own number.
type numberer struct {
	*admission.Handler
	n int
}

func (l *numberer) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := a.GetObject().(*api.Pod)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[fmt.Sprintf("n%d", l.n)] = "yes"
	return nil
}

// TestLongQuietRunsSplit: a run of quiet steps goes out in lines short enough that upstream's
// truncation of long warnings (256 runes) never cuts one.
func TestLongQuietRunsSplit(t *testing.T) {
	d := New(true, false)
	d.SetAuthorizer(onlyAlice)
	var handlers []admission.Interface
	for i := range 40 {
		handlers = append(handlers, d.Decorate(quietPlugin{admission.NewHandler(admission.Create)}, fmt.Sprintf("QuietPlugin%d", i)))
	}
	r := &recorded{}
	ctx := requestContext(r)
	if err := admission.NewChainHandler(handlers...).Admit(ctx, request(true, true, nil), objectInterfaces); err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, w := range r.warnings {
		if n := len([]rune(w)); n > 256 {
			t.Errorf("a warning of %d runes: %q", n, w)
		}
		named += strings.Count(w, "QuietPlugin")
	}
	if named != 40 || len(r.warnings) < 2 {
		t.Errorf("%d warnings naming %d steps, want every one of the 40 steps on a few lines:\n%s", len(r.warnings), named, strings.Join(r.warnings, "\n"))
	}
}
