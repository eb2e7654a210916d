package webhook

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/metrics/testutil"

	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
)

func softenedAudit() enforcement.Soften { return enforcement.Soften{Audit: true, Label: "Audit"} }

// countedObject counts its deep copies.
type countedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	copies            *atomic.Int32
}

func (o *countedObject) DeepCopyObject() runtime.Object {
	o.copies.Add(1)
	c := *o
	c.ObjectMeta = *o.ObjectMeta.DeepCopy()
	return &c
}

func countedAttributes(copies *atomic.Int32) *admission.VersionedAttributes {
	obj := &countedObject{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}, copies: copies}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Counted"}
	record := admission.NewAttributesRecord(obj, nil, gvk, "ns", "x", schema.GroupVersionResource{Version: "v1", Resource: "counteds"}, "",
		admission.Create, &metav1.CreateOptions{}, false, nil)
	return NewVersionedAttributes(record, obj, nil, gvk)
}

// testShadows is a pool of calls calls and maxBytes bytes per webhook, with its metrics
// registered.
func testShadows(t *testing.T, calls int, maxBytes int64) *Shadows {
	t.Helper()
	m := NewMetrics()
	testutil.NewFakeKubeRegistry("1.37.0").MustRegister(m.shadowCalls, m.wouldDeny)
	s := newShadows(m, "validating", calls, maxBytes)
	t.Cleanup(s.Wait)
	return s
}

func shadowCount(t *testing.T, s *Shadows, name, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(s.metrics.shadowCalls.WithLabelValues(name, s.step, result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// heldBytes are the bytes the calls under way hold, over every webhook.
func heldBytes(s *Shadows) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var held int64
	for _, share := range s.shares {
		held += share.bytes
	}
	return held
}

// blockCall starts a call of name that answers once the returned function is called.
func blockCall(t *testing.T, b *ShadowBatch, name string) (release func()) {
	t.Helper()
	started, unblock := make(chan struct{}), make(chan struct{})
	b.Submit(ShadowCall{Softened: Softened{Name: name}, Do: func(context.Context) ShadowVerdict {
		close(started)
		<-unblock
		return ShadowVerdict{}
	}})
	<-started
	released := false
	release = func() {
		if !released {
			released = true
			close(unblock)
		}
	}
	t.Cleanup(release)
	return release
}

// TestShadowDroppedWithoutCopy: with its webhook's calls at their bound, or its bytes, a
// softened call is dropped, counted, and its object is never copied; with room, it is copied
// once and made.
func TestShadowDroppedWithoutCopy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		calls    int
		maxBytes int64
		want     string
	}{
		{name: "calls at their bound", calls: 1, maxBytes: 1 << 20, want: ShadowDropped},
		{name: "byte bound", calls: 2, maxBytes: 10, want: ShadowDropped},
		{name: "room", calls: 2, maxBytes: 1 << 20, want: ShadowInTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testShadows(t, tc.calls, tc.maxBytes)
			s.AwaitForTest()
			b := s.Batch()
			release := blockCall(t, b, "hook.example.com")
			var copies atomic.Int32
			var made atomic.Bool
			b.SubmitCopy(ShadowCall{Softened: Softened{Name: "hook.example.com"}}, countedAttributes(&copies), &EncodedObjects{},
				func(c *ShadowCall, _ *admission.VersionedAttributes, _ *EncodedObjects) {
					c.Do = func(context.Context) ShadowVerdict { made.Store(true); return ShadowVerdict{} }
				})
			release()
			b.Harvest(context.Background())
			s.Wait()
			wantCopies, wantMade := int32(0), false
			if tc.want != ShadowDropped {
				wantCopies, wantMade = 1, true
			}
			if got := copies.Load(); got != wantCopies {
				t.Errorf("object copied %d times, want %d", got, wantCopies)
			}
			if made.Load() != wantMade {
				t.Errorf("call made: %v, want %v", made.Load(), wantMade)
			}
			if got := shadowCount(t, s, "hook.example.com", tc.want); got != 1 && tc.want == ShadowDropped {
				t.Errorf("shadow_calls_total{result=%q} = %v, want 1", tc.want, got)
			}
			if got := heldBytes(s); got != 0 {
				t.Errorf("%d bytes still counted once every call ended", got)
			}
		})
	}
}

// TestShadowCopyBytesCountTheCopies: a call's bytes are ShadowCopyFactor times its JSON.
func TestShadowCopyBytesCountTheCopies(t *testing.T) {
	s := testShadows(t, 1, 1<<20)
	b := s.Batch()
	var copies atomic.Int32
	attr := countedAttributes(&copies)
	encoded := &EncodedObjects{}
	raw, err := encoded.JSON(VersionedObject(attr))
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan int64, 1)
	unblock := make(chan struct{})
	b.SubmitCopy(ShadowCall{Softened: Softened{Name: "hook.example.com"}}, attr, encoded, func(c *ShadowCall, _ *admission.VersionedAttributes, _ *EncodedObjects) {
		c.Do = func(context.Context) ShadowVerdict {
			held <- heldBytes(s)
			<-unblock
			return ShadowVerdict{}
		}
	})
	got := <-held
	close(unblock)
	if want := int64(ShadowCopyFactor * len(raw)); got != want {
		t.Errorf("a call holds %d bytes of the bound, want %d (%d× its JSON)", got, want, ShadowCopyFactor)
	}
}

// TestShadowPanicFollowsThePolicy: a panic during a softened call is failed open when the
// call says so (a validating webhook under Ignore, as upstream's validating dispatcher does),
// and a would_fail otherwise.
func TestShadowPanicFollowsThePolicy(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		s := testShadows(t, 1, 1<<20)
		s.AwaitForTest()
		b := s.Batch()
		b.Submit(ShadowCall{Softened: Softened{Name: "panics.example.com", Mode: softenedAudit()}, FailOpenOnPanic: failOpen,
			Do: func(context.Context) ShadowVerdict { panic("boom") }})
		results := b.Harvest(context.Background())
		s.Wait()
		if len(results) != 1 {
			t.Fatalf("failOpen %v: %d results, want 1", failOpen, len(results))
		}
		v := results[0].Verdict
		wouldFail, _ := testutil.GetCounterMetricValue(s.metrics.wouldDeny.WithLabelValues("panics.example.com", "validating", "Audit", OutcomeWouldFail))
		if failOpen {
			if !v.FailedOpen || v.Outcome != "" || wouldFail != 0 {
				t.Errorf("failOpen: verdict %+v, would_fail counted %v; want failed open, not counted", v, wouldFail)
			}
		} else if v.Outcome != OutcomeWouldFail || wouldFail != 1 {
			t.Errorf("no failOpen: verdict %+v, would_fail counted %v; want would_fail, counted once", v, wouldFail)
		}
	}
}

// TestShadowPastTheRequestDeadlineWouldFail: a softened call that answers after the
// request's deadline (here one already past when the request reached the webhook) would,
// enforced, have timed the request out: a would_fail, whatever the webhook answered.
func TestShadowPastTheRequestDeadlineWouldFail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Time
		want     string
	}{
		{name: "no deadline", want: OutcomeWouldDeny},
		{name: "a deadline far ahead", deadline: time.Now().Add(time.Hour), want: OutcomeWouldDeny},
		{name: "a deadline past", deadline: time.Now().Add(-time.Millisecond), want: OutcomeWouldFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testShadows(t, 1, 1<<20)
			s.AwaitForTest()
			b := s.Batch()
			b.Submit(ShadowCall{Softened: Softened{Name: "slow.example.com", Mode: softenedAudit()}, Deadline: tc.deadline,
				Do: func(context.Context) ShadowVerdict { return ShadowVerdict{Outcome: OutcomeWouldDeny, Message: "no"} }})
			results := b.Harvest(context.Background())
			s.Wait()
			if len(results) != 1 || results[0].Verdict.Outcome != tc.want {
				t.Fatalf("results %+v, want one %s", results, tc.want)
			}
		})
	}
}

// TestShadowShareKeepsAFastWebhookMoving: a webhook that never answers fills its share (3
// calls under way here) and the rest of its calls are dropped; a fast webhook's calls are all
// made meanwhile, none dropped.
func TestShadowShareKeepsAFastWebhookMoving(t *testing.T) {
	s := testShadows(t, 3, 1<<20)
	s.AwaitForTest()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := s.Batch()
	for range 10 {
		slow.Submit(ShadowCall{Softened: Softened{Name: "slow.example.com"}, Do: func(context.Context) ShadowVerdict {
			<-release
			return ShadowVerdict{}
		}})
	}
	if got := shadowCount(t, s, "slow.example.com", ShadowDropped); got != 7 {
		t.Errorf("slow webhook: %v calls dropped, want 7 (three under way: its share)", got)
	}
	for i := range 20 {
		b := s.Batch()
		b.Submit(ShadowCall{Softened: Softened{Name: "fast.example.com", Mode: softenedAudit()}, Do: func(context.Context) ShadowVerdict {
			return ShadowVerdict{Outcome: OutcomeWouldDeny, Message: "no"}
		}})
		if results := b.Harvest(context.Background()); len(results) != 1 {
			t.Fatalf("fast call %d: %d results, want 1", i, len(results))
		}
	}
	if got := shadowCount(t, s, "fast.example.com", ShadowDropped); got != 0 {
		t.Errorf("fast webhook: %v calls dropped beside the slow one's, want 0", got)
	}
	if got := shadowCount(t, s, "fast.example.com", ShadowInTime); got != 20 {
		t.Errorf("fast webhook: %v verdicts in time, want 20", got)
	}
}

// TestShadowDrainedRefusesNewCalls: once the server has drained, a call submitted is not
// made and is counted as dropped; the call under way ends and is counted.
func TestShadowDrainedRefusesNewCalls(t *testing.T) {
	s := testShadows(t, 4, 1<<20)
	b := s.Batch()
	release := blockCall(t, b, "running.example.com")
	s.Drained()
	var made atomic.Bool
	b.Submit(ShadowCall{Softened: Softened{Name: "after.example.com"}, Do: func(context.Context) ShadowVerdict {
		made.Store(true)
		return ShadowVerdict{}
	}})
	release()
	b.Refuse()
	s.Wait()
	if made.Load() {
		t.Error("a call was made after the server drained")
	}
	if got := shadowCount(t, s, "after.example.com", ShadowDropped); got != 1 {
		t.Errorf("calls after the drain counted dropped: %v, want 1", got)
	}
	if got := shadowCount(t, s, "running.example.com", ShadowRefused); got != 1 {
		t.Errorf("the call under way: counted refused %v, want 1", got)
	}
}

// TestShadowEachVerdictCountedOnce: what became of each verdict — recorded (in_time), past its
// own maxWait while the request waited for another call (late, not recorded), with maxWait
// 0s (async), or of a refused request, in or to come (refused) — is counted once.
func TestShadowEachVerdictCountedOnce(t *testing.T) {
	zero, short := time.Duration(0), 20*time.Millisecond
	s := testShadows(t, 8, 1<<20)
	b := s.Batch()
	var bounded sync.WaitGroup
	bounded.Add(2)
	b.Submit(ShadowCall{Softened: Softened{Name: "in-time.example.com"}, Do: func(context.Context) ShadowVerdict {
		// Answers once the bounded calls have answered past their bounds: the request is
		// still waiting for it then.
		bounded.Wait()
		return ShadowVerdict{}
	}})
	for _, c := range []struct {
		name string
		wait *time.Duration
	}{{"async.example.com", &zero}, {"late.example.com", &short}} {
		b.Submit(ShadowCall{Softened: Softened{Name: c.name}, MaxWait: c.wait, Do: func(context.Context) ShadowVerdict {
			defer bounded.Done()
			time.Sleep(2 * short) // a webhook slower than its maxWait
			return ShadowVerdict{}
		}})
	}
	results := b.Harvest(context.Background())
	s.Wait()
	if len(results) != 1 || results[0].Softened.Name != "in-time.example.com" {
		t.Errorf("recorded %+v, want the in-time call's verdict alone", results)
	}
	for name, want := range map[string]string{"in-time.example.com": ShadowInTime, "async.example.com": ShadowAsync, "late.example.com": ShadowLate} {
		if got := shadowCount(t, s, name, want); got != 1 {
			t.Errorf("%s: shadow_calls_total{result=%q} = %v, want 1", name, want, got)
		}
	}

	refused := s.Batch()
	release := blockCall(t, refused, "refused.example.com")
	refused.Refuse()
	release()
	s.Wait()
	if got := shadowCount(t, s, "refused.example.com", ShadowRefused); got != 1 {
		t.Errorf("a refused request's verdict: counted refused %v, want 1", got)
	}
}
