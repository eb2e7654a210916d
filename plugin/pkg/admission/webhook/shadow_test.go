package webhook

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

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

// testShadows is a pool of one worker and a queue of queue, with its metrics registered.
func testShadows(t *testing.T, queue int, maxBytes int64, clk *clocktesting.FakeClock) *Shadows {
	t.Helper()
	m := NewMetrics()
	testutil.NewFakeKubeRegistry("1.37.0").MustRegister(m.shadowCalls, m.wouldDeny)
	s := newShadows(m, "validating", 1, queue, maxBytes, clk)
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

// blockWorker occupies the pool's one worker until the returned function is called.
func blockWorker(t *testing.T, b *ShadowBatch) (release func()) {
	t.Helper()
	started, unblock := make(chan struct{}), make(chan struct{})
	b.Submit(ShadowCall{Softened: Softened{Name: "blocker.example.com"}, Do: func(context.Context) ShadowVerdict {
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

// TestShadowDroppedWithoutCopy: with every place of the pool taken (its worker busy, its
// queue full), or its byte bound reached, a softened call is dropped, counted, and its
// object is never copied; with room, it is copied once and made.
func TestShadowDroppedWithoutCopy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		queue    int
		maxBytes int64
		want     string
	}{
		{name: "queue full", queue: 0, maxBytes: 1 << 20, want: ShadowDropped},
		{name: "byte bound", queue: 1, maxBytes: 10, want: ShadowDropped},
		{name: "room", queue: 1, maxBytes: 1 << 20, want: ShadowInTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testShadows(t, tc.queue, tc.maxBytes, clocktesting.NewFakeClock(time.Now()))
			s.AwaitForTest()
			b := s.Batch()
			release := blockWorker(t, b)
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
			if got := shadowCount(t, s, "hook.example.com", tc.want); got != 1 {
				t.Errorf("shadow_calls_total{result=%q} = %v, want 1", tc.want, got)
			}
			if got := s.bytes.Load(); got != 0 {
				t.Errorf("%d bytes still counted once every call ended", got)
			}
		})
	}
}

// TestShadowCopyBytesCountTheCopies: a call's bytes are ShadowCopyFactor times its JSON.
func TestShadowCopyBytesCountTheCopies(t *testing.T) {
	s := testShadows(t, 1, 1<<20, clocktesting.NewFakeClock(time.Now()))
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
			held <- s.bytes.Load()
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

// TestShadowQueuedPastItsTimeoutIsDropped: a call still queued when its own timeout has
// passed is not made, and is counted as dropped; one taken in time is made.
func TestShadowQueuedPastItsTimeoutIsDropped(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s := testShadows(t, 2, 1<<20, clk)
	s.AwaitForTest()
	b := s.Batch()
	release := blockWorker(t, b)
	var staleMade, freshMade atomic.Bool
	b.Submit(ShadowCall{Softened: Softened{Name: "stale.example.com"}, Timeout: time.Second,
		Do: func(context.Context) ShadowVerdict {
			staleMade.Store(true)
			return ShadowVerdict{Outcome: OutcomeWouldDeny}
		}})
	clk.Step(2 * time.Second)
	b.Submit(ShadowCall{Softened: Softened{Name: "fresh.example.com"}, Timeout: time.Second,
		Do: func(context.Context) ShadowVerdict { freshMade.Store(true); return ShadowVerdict{} }})
	release()
	results := b.Harvest(context.Background())
	s.Wait()
	if staleMade.Load() {
		t.Error("a call queued past its timeout was made")
	}
	if !freshMade.Load() {
		t.Error("a call queued within its timeout was not made")
	}
	if got := shadowCount(t, s, "stale.example.com", ShadowDropped); got != 1 {
		t.Errorf("stale call: shadow_calls_total{result=dropped} = %v, want 1", got)
	}
	if got := shadowCount(t, s, "fresh.example.com", ShadowDropped); got != 0 {
		t.Errorf("fresh call: shadow_calls_total{result=dropped} = %v, want 0", got)
	}
	for _, r := range results {
		if r.Softened.Name == "stale.example.com" {
			t.Errorf("the stale call has a result: %+v", r)
		}
	}
	if got := s.bytes.Load(); got != 0 {
		t.Errorf("%d bytes still counted once every call ended", got)
	}
}

// TestShadowPanicFollowsThePolicy: a panic during a softened call is failed open when the
// call says so (a validating webhook under Ignore, as upstream's validating dispatcher does),
// and a would_fail otherwise.
func TestShadowPanicFollowsThePolicy(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		s := testShadows(t, 1, 1<<20, clocktesting.NewFakeClock(time.Now()))
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
			s := testShadows(t, 1, 1<<20, clocktesting.NewFakeClock(time.Now()))
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

// TestShadowShareKeepsAFastWebhookMoving: a webhook that never answers fills its share of
// the pool (a worker and two queued calls of four and eight) and the rest of its calls are
// dropped; a fast webhook's calls are all made meanwhile, none dropped.
func TestShadowShareKeepsAFastWebhookMoving(t *testing.T) {
	m := NewMetrics()
	testutil.NewFakeKubeRegistry("1.37.0").MustRegister(m.shadowCalls, m.wouldDeny)
	s := newShadows(m, "validating", 4, 8, 1<<20, clocktesting.NewFakeClock(time.Now()))
	t.Cleanup(s.Wait)
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
		t.Errorf("slow webhook: %v calls dropped, want 7 (one running, two queued: its share)", got)
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
		t.Errorf("fast webhook: %v calls dropped behind the slow one's, want 0", got)
	}
	if got := shadowCount(t, s, "fast.example.com", ShadowInTime); got != 20 {
		t.Errorf("fast webhook: %v verdicts in time, want 20", got)
	}
}

// TestShadowDrainedCountsTheQueued: once the server has drained, the calls still queued are
// not made and are counted as dropped, as are calls submitted after; the call under way ends.
func TestShadowDrainedCountsTheQueued(t *testing.T) {
	s := testShadows(t, 4, 1<<20, clocktesting.NewFakeClock(time.Now()))
	b := s.Batch()
	release := blockWorker(t, b)
	var made atomic.Int32
	for range 2 {
		b.Submit(ShadowCall{Softened: Softened{Name: "queued.example.com"}, Do: func(context.Context) ShadowVerdict {
			made.Add(1)
			return ShadowVerdict{}
		}})
	}
	s.Drained()
	b.Submit(ShadowCall{Softened: Softened{Name: "after.example.com"}, Do: func(context.Context) ShadowVerdict {
		made.Add(1)
		return ShadowVerdict{}
	}})
	release()
	s.Wait()
	if n := made.Load(); n != 0 {
		t.Errorf("%d calls made after the server drained, want 0", n)
	}
	// Its share is two places (a worker's and a queued call's), both queued behind the blocker.
	if got := shadowCount(t, s, "queued.example.com", ShadowDropped); got != 2 {
		t.Errorf("queued calls counted dropped: %v, want 2", got)
	}
	if got := shadowCount(t, s, "after.example.com", ShadowDropped); got != 1 {
		t.Errorf("calls after the drain counted dropped: %v, want 1", got)
	}
	if got := s.bytes.Load(); got != 0 {
		t.Errorf("%d bytes still counted once every call ended", got)
	}
}
