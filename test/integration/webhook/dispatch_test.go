package webhook

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// chainAnnotation accumulates the stages of the serial-mutation chain.
const chainAnnotation = "chain"

// overlapHold is how long each mutating call of the serial case stays in flight: long
// enough that calls dispatched together would overlap, so the detector would see them.
const overlapHold = 100 * time.Millisecond

// overlapDetector records whether any call arrived while another was in flight.
type overlapDetector struct {
	inFlight atomic.Int32
	overlaps atomic.Int32
}

// hold keeps one call in flight for overlapHold, counting an overlap if another call was
// in flight when it arrived.
func (d *overlapDetector) hold() {
	if d.inFlight.Add(1) > 1 {
		d.overlaps.Add(1)
	}
	time.Sleep(overlapHold)
	d.inFlight.Add(-1)
}

// testSerialMutation: three mutating webhooks — two in one configuration, one in another —
// each append their stage to an annotation and refuse the request unless they see exactly
// the stages before them. The order is the configurations' names, then the webhooks' list
// order; the configuration created first and the webhook names sort the other way, so
// neither creation order nor webhook names could produce the chain.
func testSerialMutation(t *testing.T, e *env) {
	k := newCase(e.main, "serial")
	ns := k.namespace(t, nil)
	detector := &overlapDetector{}
	var mu sync.Mutex
	var order []string

	stage := func(name, before string) reviewFunc {
		return func(c *call) *admissionv1.AdmissionResponse {
			detector.hold()
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			meta := c.objectMeta()
			if got := meta.Annotations[chainAnnotation]; got != before {
				return denied(fmt.Sprintf("%s saw chain %q, want %q", name, got, before))
			}
			next := name
			if before != "" {
				next = before + "," + name
			}
			return patched(setAnnotation(meta, chainAnnotation, next))
		}
	}
	k.c.hooks.handle(k.path("stage-1"), stage("stage-1", ""))
	k.c.hooks.handle(k.path("stage-2"), stage("stage-2", "stage-1"))
	k.c.hooks.handle(k.path("stage-3"), stage("stage-3", "stage-1,stage-2"))
	hook := func(name, stage string) admissionregistrationv1.MutatingWebhook {
		return mutatingHook(k.hookName(name), k.c.hooks.clientConfig(k.path(stage)), k.selector(nil), configMapRule(opCreate))
	}
	// Created first, but its name sorts last.
	k.c.createMutating(t, mutatingConfig(k.configName("b"), hook("a-third", "stage-3")))
	// Its webhooks' names sort opposite to their list order.
	k.c.createMutating(t, mutatingConfig(k.configName("a"), hook("z-first", "stage-1"), hook("y-second", "stage-2")))

	created, err := k.createConfigMap(t, k.configMap(ns, "chained", nil))
	if err != nil {
		t.Fatalf("the chain refused the request: %v", err)
	}
	const want = "stage-1,stage-2,stage-3"
	if got := created.Annotations[chainAnnotation]; got != want {
		t.Errorf("the create response has chain %q, want %q", got, want)
	}

	t.Run("each webhook sees the previous one's patch, in configuration-name then list order", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"stage-1", "stage-2", "stage-3"}; !slices.Equal(order, want) {
			t.Errorf("webhooks were called in the order %v, want %v", order, want)
		}
	})
	t.Run("the mutation is in the stored object", func(t *testing.T) {
		if got := k.storedConfigMap(t, ns, "chained").Annotations[chainAnnotation]; got != want {
			t.Errorf("stored chain %q, want %q", got, want)
		}
	})
	t.Run("no two mutating calls overlapped", func(t *testing.T) {
		if n := detector.overlaps.Load(); n != 0 {
			t.Errorf("%d mutating calls arrived while another was in flight; mutating webhooks must be called one at a time", n)
		}
	})
}

// parallelValidators is how many validating webhooks must be in flight together.
const parallelValidators = 8

// barrierTimeout is how long each validating webhook waits for the others; generous, and
// shorter than the webhooks' timeoutSeconds so a timed-out barrier answers with a message.
const barrierTimeout = 20 * time.Second

// barrier releases the calls about one object once n of them have arrived.
type barrier struct {
	mu      sync.Mutex
	arrived map[string]int
	release map[string]chan struct{}
}

func newBarrier() *barrier {
	return &barrier{arrived: map[string]int{}, release: map[string]chan struct{}{}}
}

// await counts one arrival for key and waits until n have arrived or timeout passes. It
// returns whether the barrier opened, and how many calls had arrived.
func (b *barrier) await(key string, n int, timeout time.Duration) (bool, int) {
	b.mu.Lock()
	release, ok := b.release[key]
	if !ok {
		release = make(chan struct{})
		b.release[key] = release
	}
	b.arrived[key]++
	if b.arrived[key] == n {
		close(release)
	}
	b.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-release:
		return true, n
	case <-timer.C:
		b.mu.Lock()
		defer b.mu.Unlock()
		return false, b.arrived[key]
	}
}

// testParallelValidation: eight validating webhooks, in two configurations, each hold the
// request until all eight have arrived. The request is admitted only if the server had all
// eight calls in flight at once.
func testParallelValidation(t *testing.T, e *env) {
	k := newCase(e.main, "parallel")
	ns := k.namespace(t, nil)
	bar := newBarrier()
	const denyLabel = "deny"

	var first, second []admissionregistrationv1.ValidatingWebhook
	for i := 1; i <= parallelValidators; i++ {
		name := fmt.Sprintf("validator-%d", i)
		k.c.hooks.handle(k.path(name), func(c *call) *admissionv1.AdmissionResponse {
			meta := c.objectMeta()
			if opened, arrived := bar.await(meta.Name, parallelValidators, barrierTimeout); !opened {
				return denied(fmt.Sprintf("%s: only %d of %d validating webhooks were in flight together", name, arrived, parallelValidators))
			}
			if meta.Labels[denyLabel] == name {
				return denied(name + " refuses this object")
			}
			return nil
		})
		hook := validatingHook(k.hookName(name), k.c.hooks.clientConfig(k.path(name)), k.selector(nil), configMapRule(opCreate))
		hook.TimeoutSeconds = ptr(int32(30))
		if i <= parallelValidators/2 {
			first = append(first, hook)
		} else {
			second = append(second, hook)
		}
	}
	k.c.createValidating(t, validatingConfig(k.configName("a"), first...))
	k.c.createValidating(t, validatingConfig(k.configName("b"), second...))

	t.Run("all eight are called together", func(t *testing.T) {
		if _, err := k.createConfigMap(t, k.configMap(ns, "together", nil)); err != nil {
			t.Fatalf("want admitted (all %d validating webhooks in flight at once), got %v", parallelValidators, err)
		}
		for i := 1; i <= parallelValidators; i++ {
			path := k.path(fmt.Sprintf("validator-%d", i))
			if n := len(callsFor(k.c.hooks, path, "together")); n != 1 {
				t.Errorf("%s was called %d times, want once", path, n)
			}
		}
	})
	t.Run("any single denial rejects the request with that webhook's message", func(t *testing.T) {
		_, err := k.createConfigMap(t, k.configMap(ns, "refused", map[string]string{denyLabel: "validator-5"}))
		wantRefused(t, err, fmt.Sprintf("admission webhook %q denied the request: validator-5 refuses this object", k.hookName("validator-5")))
		k.wantNotStored(t, ns, "refused")
	})
}
