package webhook

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// shadowingMutator submits one call, which answers only once release is closed, and defers
// its batch to the harvest point.
type shadowingMutator struct {
	*admission.Handler
	shadows  *Shadows
	release  chan struct{}
	recorded chan []ShadowResult
}

func (m *shadowingMutator) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	b := m.shadows.Batch()
	release := m.release
	b.Submit(ShadowCall{Softened: Softened{Name: "shadow.example.com", Mode: softenedAudit()}, Timeout: 2 * time.Second, Do: func(context.Context) ShadowVerdict {
		<-release
		return ShadowVerdict{Outcome: OutcomeWouldDeny, Message: "no"}
	}})
	record := func(_ context.Context, _ admission.Attributes, results []ShadowResult) { m.recorded <- results }
	if !Defer(ctx, b, record) {
		record(context.Background(), a, b.Harvest(context.Background()))
	}
	return nil
}

// releasingValidator closes release when it runs (so the shadow can only answer after the
// chain reached it), then refuses or admits.
type releasingValidator struct {
	*admission.Handler
	release chan struct{}
	refuse  bool
}

func (v *releasingValidator) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	close(v.release)
	if v.refuse {
		return errors.New("refused")
	}
	return nil
}

// quietValidator validates nothing: it handles no operation.
type quietValidator struct{ *admission.Handler }

func (quietValidator) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return errors.New("called for an operation it does not handle")
}

// TestHarvestPointIsTheChainsEnd: a mutating shadow that can answer only once a later
// validating plugin has run is recorded on the request when the chain ends (its wait overlapped
// the rest of the chain), even when the chain's last validating plugin does not handle the
// operation. When a plugin refuses the request, nothing is waited for: the verdict comes
// after, and is counted as refused.
func TestHarvestPointIsTheChainsEnd(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		s := testShadows(t, 4, 1<<20)
		release := make(chan struct{})
		mutator := &shadowingMutator{Handler: admission.NewHandler(admission.Create), shadows: s, release: release, recorded: make(chan []ShadowResult, 1)}
		validator := &releasingValidator{Handler: admission.NewHandler(admission.Create), release: release, refuse: refuse}
		point := &HarvestPoint{}
		var chain admission.Interface = admission.NewChainHandler(
			point.Decorate(mutator, "Shadowing"),
			point.Decorate(validator, "Releasing"),
			point.Decorate(quietValidator{Handler: admission.NewHandler(admission.Delete)}, "Quiet"),
		)
		a := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "ns", "p",
			schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", admission.Create, &metav1.CreateOptions{}, false, nil)
		// The request's context carries the harvest point's state, as WithDeferredShadows
		// gives it; the validating phase has attributes of its own, as upstream makes them.
		ctx := context.WithValue(context.Background(), deferredKey{}, &deferredShadows{})
		if err := chain.(admission.MutationInterface).Admit(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case results := <-mutator.recorded:
			t.Fatalf("refuse %v: recorded %v at the mutating plugin's end, before the chain's", refuse, results)
		default:
		}
		validating := admission.NewAttributesRecord(nil, nil, a.GetKind(), a.GetNamespace(), a.GetName(), a.GetResource(), "", a.GetOperation(), a.GetOperationOptions(), false, nil)
		err := chain.(admission.ValidationInterface).Validate(ctx, validating, nil)
		if (err != nil) != refuse {
			t.Fatalf("refuse %v: validation returned %v", refuse, err)
		}
		s.Wait()
		if refuse {
			select {
			case results := <-mutator.recorded:
				t.Errorf("refused: %v recorded on the request", results)
			default:
			}
			if got := shadowCount(t, s, "shadow.example.com", ShadowRefused); got != 1 {
				t.Errorf("refused: verdicts counted refused %v, want 1", got)
			}
			continue
		}
		results := <-mutator.recorded
		if want := 1; len(results) != want {
			t.Errorf("refuse %v: %d verdicts recorded on the request, want %d", refuse, len(results), want)
		}
	}
}

// TestDeleteCollectionWaitsInOneAdmissionRun: a DeleteCollection runs admission once per
// object under one deadline, and waits for its shadows in the first run only: the second
// run's verdict, which can come only once its chain has returned, is not waited for and is
// counted async, not late. A request tried again (an update after a conflict) waits in each
// try, as stock calls its enforced webhooks in each.
func TestDeleteCollectionWaitsInOneAdmissionRun(t *testing.T) {
	for _, tc := range []struct {
		verb string
		// waitsAgain: the second run waits for its verdict.
		waitsAgain bool
	}{
		{verb: "deletecollection"},
		{verb: "update", waitsAgain: true},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			s := testShadows(t, 4, 1<<20)
			mutator := &shadowingMutator{Handler: admission.NewHandler(admission.Delete, admission.Update), shadows: s, recorded: make(chan []ShadowResult, 2)}
			validator := &releasingValidator{Handler: admission.NewHandler(admission.Delete, admission.Update)}
			point := &HarvestPoint{}
			chain := admission.NewChainHandler(point.Decorate(mutator, "Shadowing"), point.Decorate(validator, "Releasing"))
			ctx := endpointsrequest.WithRequestInfo(context.Background(), &endpointsrequest.RequestInfo{IsResourceRequest: true, Verb: tc.verb, Resource: "pods"})
			ctx = context.WithValue(ctx, deferredKey{}, &deferredShadows{})
			var releases []chan struct{}
			for run := range 2 {
				a := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "ns", fmt.Sprintf("p%d", run),
					schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", admission.Delete, &metav1.DeleteOptions{}, false, nil)
				release := make(chan struct{})
				releases = append(releases, release)
				mutator.release, validator.release = release, release
				if run == 1 && !tc.waitsAgain {
					// The validator releases nothing: the shadow answers after the chain
					// returned.
					validator.release = make(chan struct{})
				}
				if err := chain.Admit(ctx, a, nil); err != nil {
					t.Fatal(err)
				}
				if err := chain.Validate(ctx, a, nil); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.waitsAgain {
				close(releases[1])
			}
			s.Wait()
			want := map[string]float64{ShadowInTime: 1, ShadowAsync: 1, ShadowLate: 0}
			if tc.waitsAgain {
				want = map[string]float64{ShadowInTime: 2, ShadowAsync: 0, ShadowLate: 0}
			}
			for result, count := range want {
				if got := shadowCount(t, s, "shadow.example.com", result); got != count {
					t.Errorf("verdicts counted %s: %v, want %v", result, got, count)
				}
			}
			first, second := <-mutator.recorded, <-mutator.recorded
			if wantSecond := map[bool]int{false: 0, true: 1}[tc.waitsAgain]; len(first) != 1 || len(second) != wantSecond {
				t.Errorf("verdicts recorded: %d in the first run, %d in the second; want 1 and %d", len(first), len(second), wantSecond)
			}
		})
	}
}

// TestRequestEndedRecordsNothing: a batch harvested once its request's context is done (its
// deadline, its client gone) records nothing and counts its verdicts as refused; once the
// request's handler has returned, a batch is not deferred any more (its dispatch closes it).
func TestRequestEndedRecordsNothing(t *testing.T) {
	s := testShadows(t, 4, 1<<20)
	b := s.Batch()
	b.Submit(ShadowCall{Softened: Softened{Name: "answered.example.com"}, Do: func(context.Context) ShadowVerdict { return ShadowVerdict{} }})
	s.Wait()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if results := b.Harvest(ended); len(results) != 0 {
		t.Errorf("recorded %v on a request that had ended", results)
	}
	if got := shadowCount(t, s, "answered.example.com", ShadowRefused); got != 1 {
		t.Errorf("verdict counted refused %v, want 1", got)
	}

	ctx := context.WithValue(context.Background(), deferredKey{}, &deferredShadows{})
	deferredFrom(ctx).armed.Store(true)
	refuseDeferred(ctx, true)
	if Defer(ctx, s.Batch(), func(context.Context, admission.Attributes, []ShadowResult) {}) {
		t.Error("a batch was deferred after the request's handler returned")
	}
}
