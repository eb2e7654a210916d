package trace

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// TestOneTracePerRequest: upstream admits on one record and validates on another; the trace
// is still one: the authorizer is asked once, the validating steps follow the mutating ones
// in the same numbering as on one record.
func TestOneTracePerRequest(t *testing.T) {
	d := New(true, false)
	var asked atomic.Int32
	d.SetAuthorizer(authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked.Add(1)
		return onlyAlice(ctx, a)
	}))
	r := &recorded{}
	if err := run(chain(d, nil), request(true, true, r), r); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the authorizer was asked %d times for one request, want once", n)
	}
	want := []*regexp.Regexp{
		traceLine("mutating 1.1 webhook w.example.com (c): admitted, changed /x"),
		traceLine("mutating 1 Labeller: admitted, changed /metadata/labels /spec/priorityClassName"),
		traceLine("mutating 2 Both: admitted"),
		regexp.MustCompile(`^admission trace: validating 1-2 admitted, no change: Both \([0-9.]+[nµm]?s\), Denier \([0-9.]+[nµm]?s\)$`),
	}
	matchWarnings(t, r.warnings, want)
}

func matchWarnings(t *testing.T, warnings []string, want []*regexp.Regexp) {
	t.Helper()
	if len(warnings) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(warnings, "\n"), len(want))
	}
	for i, w := range want {
		if !w.MatchString(warnings[i]) {
			t.Errorf("warning %d: %q does not match %s", i, warnings[i], w)
		}
	}
}

// TestRetriedAttempts: an update the server retries after a conflict admits and validates
// again on new records, in the same request. Each attempt's steps have audit keys of their
// own (the audit event keeps the first value of a key), and its warnings say which attempt
// they are.
func TestRetriedAttempts(t *testing.T) {
	d := New(true, true)
	d.SetAuthorizer(onlyAlice)
	c := chain(d, nil)
	r := &recorded{}
	ctx := requestContext(r)
	for range 2 {
		if err := runIn(ctx, c, request(true, true, r), r); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.collisions) > 0 {
		t.Errorf("the second attempt set audit keys the first had set: %q", r.collisions)
	}
	for _, key := range []string{"mutating-1", "mutating-1-1", "mutating-2", "validating-1", "validating-2",
		"attempt-2-mutating-1", "attempt-2-mutating-1-1", "attempt-2-mutating-2", "attempt-2-validating-1", "attempt-2-validating-2"} {
		if _, ok := r.annotations[AuditAnnotationPrefix+key]; !ok {
			t.Errorf("annotation %s%s missing: %v", AuditAnnotationPrefix, key, r.annotations)
		}
	}
	if n := len(r.annotations); n != 10 {
		t.Errorf("%d annotations, want 10: %v", n, r.annotations)
	}
	quiet := func(prefix string) *regexp.Regexp {
		return regexp.MustCompile(`^admission trace: ` + prefix + `validating 1-2 admitted, no change: Both \([0-9.]+[nµm]?s\), Denier \([0-9.]+[nµm]?s\)$`)
	}
	matchWarnings(t, r.warnings, []*regexp.Regexp{
		traceLine("mutating 1.1 webhook w.example.com (c): admitted, changed /x"),
		traceLine("mutating 1 Labeller: admitted, changed /metadata/labels /spec/priorityClassName"),
		traceLine("mutating 2 Both: admitted"),
		quiet(""),
		regexp.MustCompile(`^admission trace: attempt 2: admission runs again`),
		traceLine("attempt 2: mutating 1.1 webhook w.example.com (c): admitted, changed /x"),
		traceLine("attempt 2: mutating 1 Labeller: admitted, changed /metadata/labels /spec/priorityClassName"),
		traceLine("attempt 2: mutating 2 Both: admitted"),
		quiet("attempt 2: "),
	})
}

// TestAttemptsBounded: a request admitting many records (a collection's delete admits each
// object) traces its first maxAttempts attempts, says once that the others are not, and
// records nothing more, so that its audit event stays bounded.
func TestAttemptsBounded(t *testing.T) {
	d := New(true, true)
	d.SetAuthorizer(onlyAlice)
	c := chain(d, nil)
	r := &recorded{}
	ctx := requestContext(r)
	for range 50 {
		if err := runIn(ctx, c, request(true, true, r), r); err != nil {
			t.Fatal(err)
		}
	}
	attempts := map[string]bool{}
	for key := range r.annotations {
		rest := strings.TrimPrefix(key, AuditAnnotationPrefix)
		attempt := "1"
		if after, ok := strings.CutPrefix(rest, "attempt-"); ok {
			attempt, _, _ = strings.Cut(after, "-")
		}
		attempts[attempt] = true
	}
	for _, want := range []string{"1", "2", "3"} {
		if !attempts[want] {
			t.Errorf("attempt %s is not traced: %v", want, r.annotations)
		}
	}
	if n := len(r.annotations); n != 3*5+1 {
		t.Errorf("%d annotations, want the 5 steps of each of 3 attempts and one saying the rest are not traced: %v", n, r.annotations)
	}
	if _, ok := r.annotations[AuditAnnotationPrefix+"untraced-attempts"]; !ok {
		t.Errorf("no annotation says the attempts past the third are not traced: %v", r.annotations)
	}
	notTraced := 0
	for _, w := range r.warnings {
		if strings.Contains(w, "are not traced") {
			notTraced++
		}
		if strings.Contains(w, "attempt 4") {
			t.Errorf("attempt 4 is traced: %q", w)
		}
	}
	if notTraced != 1 {
		t.Errorf("%d warnings say attempts are not traced, want 1: %q", notTraced, r.warnings)
	}
}

// TestWarningBudgetPerResponse: however many records the request's admission runs on, the
// trace stops where the response's warnings, the others' included, leave room for the
// warnings still to come; these all reach the client, whole, within upstream's 4 KiB.
func TestWarningBudgetPerResponse(t *testing.T) {
	d := New(true, false)
	d.SetAuthorizer(onlyAlice)
	var handlers []admission.Interface
	for i := range 60 {
		handlers = append(handlers, d.Decorate(&numberer{Handler: admission.NewHandler(admission.Create), n: i}, fmt.Sprintf("Numberer%d", i)))
		handlers = append(handlers, d.Decorate(&denier{Handler: admission.NewHandler(admission.Create)}, fmt.Sprintf("Checker%d", i)))
	}
	var c admission.Interface = admission.NewChainHandler(handlers...)
	r := &recorded{}
	ctx := requestContext(r)
	// A webhook's own warning before the trace, and a plugin's after it.
	before := "webhook w.example.com: " + strings.Repeat("b", 200)
	after := []string{"plugin X: " + strings.Repeat("a", 240), "plugin Y: " + strings.Repeat("a", 240)}
	warning.AddWarning(ctx, "", before)
	a := request(true, true, nil)
	if err := c.(admission.MutationInterface).Admit(ctx, a, objectInterfaces); err != nil {
		t.Fatal(err)
	}
	// Validation on a new record, then a retried attempt: the budget is the response's.
	pod := a.GetObject().(*api.Pod)
	if err := c.(admission.ValidationInterface).Validate(ctx, record(pod, true, nil), objectInterfaces); err != nil {
		t.Fatal(err)
	}
	if err := runIn(ctx, c, request(true, true, nil), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range after {
		warning.AddWarning(ctx, "", w)
	}
	total, cuts := 0, 0
	for _, w := range r.warnings {
		total += utf8.RuneCountInString(w)
		if strings.HasPrefix(w, WarningPrefix+"the steps that follow are not shown") {
			cuts++
		}
	}
	if total > warningLimit {
		t.Errorf("the response's warnings are %d runes, past upstream's %d: upstream truncates them all", total, warningLimit)
	}
	if cuts != 1 {
		t.Errorf("%d lines say the trace is cut, want 1:\n%s", cuts, strings.Join(r.warnings, "\n"))
	}
	if r.warnings[0] != before || !strings.HasSuffix(strings.Join(r.warnings, "\n"), strings.Join(after, "\n")) {
		t.Errorf("the other warnings are not all there, whole:\n%s", strings.Join(r.warnings, "\n"))
	}
}

// TestClientSeesNamesAndVerdicts: a step's reason — a webhook's URL and error, a plugin's
// message — is not in the warnings a client gets, nor in the audit event below Request
// level; the Request-level annotation has it.
func TestClientSeesNamesAndVerdicts(t *testing.T) {
	const reason = `Post "https://hook.internal.example:8443/validate?token=s3cret": dial tcp 10.0.0.7:8443: connect: connection refused`
	d := New(true, true)
	d.SetAuthorizer(onlyAlice)
	hook := d.Decorate(&labeller{Handler: admission.NewHandler(admission.Create), sub: func(ctx context.Context, a admission.Attributes) {
		From(a).Sub(ctx, a, Mutating, Step{Name: "webhook w.example.com (c)", Verdict: "failed open: " + reason})
	}}, "Labeller")
	denied := d.Decorate(&denier{Handler: admission.NewHandler(admission.Create), err: admission.NewForbidden(request(true, true, nil), fmt.Errorf("secret detail 10.0.0.7"))}, "Denier")
	r := &recorded{}
	err := run(admission.NewChainHandler(hook, denied), request(true, true, r), r)
	if err == nil {
		t.Fatal("the denier admitted")
	}
	matchWarnings(t, r.warnings, []*regexp.Regexp{
		traceLine("mutating 1.1 webhook w.example.com (c): failed open"),
		traceLine("mutating 1 Labeller: admitted, changed /metadata/labels /spec/priorityClassName"),
		traceLine("validating 1 Denier: denied (403)"),
	})
	for key, value := range r.annotations {
		if r.levels[key] != auditinternal.LevelRequest && (strings.Contains(value, "10.0.0.7") || strings.Contains(value, "https://")) {
			t.Errorf("audit annotation %s at level %s carries a reason: %q", key, r.levels[key], value)
		}
	}
	for key, want := range map[string]string{"mutating-1-1": reason, "validating-1": "secret detail 10.0.0.7"} {
		got := r.annotations[AuditAnnotationPrefix+key+ReasonSuffix]
		if !strings.Contains(got, want) || r.levels[AuditAnnotationPrefix+key+ReasonSuffix] != auditinternal.LevelRequest {
			t.Errorf("annotation %s%s%s = %q at %s, want %q at Request level", AuditAnnotationPrefix, key, ReasonSuffix, got, r.levels[AuditAnnotationPrefix+key+ReasonSuffix], want)
		}
	}
}

// TestNoRequestStateNoTrace: admission outside a request given its state by the server's
// handler chain is not traced, and costs nothing.
func TestNoRequestStateNoTrace(t *testing.T) {
	d := New(true, true)
	d.SetAuthorizer(onlyAlice)
	r := &recorded{}
	ctx := warning.WithWarningRecorder(context.Background(), r)
	if err := runIn(ctx, chain(d, nil), request(true, true, r), r); err != nil {
		t.Fatal(err)
	}
	if len(r.warnings) != 0 || len(r.annotations) != 0 {
		t.Errorf("traced without the request's state: warnings %q, annotations %v", r.warnings, r.annotations)
	}
}
