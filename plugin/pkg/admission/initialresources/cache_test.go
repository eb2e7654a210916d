package initialresources

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a time the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gatedCompute counts computations and holds each until the test lets it finish.
type gatedCompute struct {
	calls  atomic.Int32
	gate   chan struct{}
	value  atomic.Int32
	failed atomic.Bool
}

func (g *gatedCompute) compute(ctx context.Context, _ string) (int32, error) {
	g.calls.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if g.failed.Load() {
		return 0, errors.New("source down")
	}
	return g.value.Load(), nil
}

// waitFor polls a condition the cache's background goroutine makes true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func newTestCache(t *testing.T) (*cache[string, int32], *gatedCompute, *fakeClock, *atomic.Int32) {
	g := &gatedCompute{gate: make(chan struct{})}
	var errs atomic.Int32
	c := newCache(time.Minute, time.Minute, g.compute, func(string, error) { errs.Add(1) })
	clock := &fakeClock{now: fixedNow}
	c.now = clock.Now
	return c, g, clock, &errs
}

// later is a deadline far enough away for a computation the test lets finish.
func later() time.Time { return time.Now().Add(time.Minute) }

// TestCacheMissDoesNotWait: a miss returns at its deadline, starts one computation, and the
// next request gets its value.
func TestCacheMissDoesNotWait(t *testing.T) {
	c, g, _, _ := newTestCache(t)
	g.value.Store(7)
	for range 3 {
		if _, ok := c.get(context.Background(), "nginx", time.Time{}); ok {
			t.Fatal("a value before any computation finished")
		}
	}
	waitFor(t, "the computation to start", func() bool { return g.calls.Load() >= 1 })
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d computations for three misses, want 1", n)
	}
	close(g.gate)
	waitFor(t, "the computation to be stored", func() bool { v, ok := c.get(context.Background(), "nginx", time.Time{}); return ok && v == 7 })
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d computations, want 1", n)
	}
}

// TestCacheMissWaitsForAFastSource: a request with time left gets the value computed for it.
func TestCacheMissWaitsForAFastSource(t *testing.T) {
	c, g, _, _ := newTestCache(t)
	g.value.Store(3)
	close(g.gate)
	if v, ok := c.get(context.Background(), "nginx", later()); !ok || v != 3 {
		t.Errorf("get = %d, %t; want 3, true", v, ok)
	}
}

// TestCacheRefreshesInTheBackground: past half its TTL a value is still served while a
// refresh runs; past its TTL unrefreshed, it is gone.
func TestCacheRefreshesInTheBackground(t *testing.T) {
	c, g, clock, _ := newTestCache(t)
	g.value.Store(1)
	gate := g.gate
	close(gate)
	if _, ok := c.get(context.Background(), "nginx", later()); !ok {
		t.Fatal("no value")
	}
	g.gate = make(chan struct{}) // the refresh waits
	g.value.Store(2)
	clock.Step(31 * time.Second)
	if v, ok := c.get(context.Background(), "nginx", time.Time{}); !ok || v != 1 {
		t.Errorf("during the refresh get = %d, %t; want the old 1", v, ok)
	}
	waitFor(t, "the refresh to start", func() bool { return g.calls.Load() == 2 })
	close(g.gate)
	waitFor(t, "the refreshed value", func() bool { v, ok := c.get(context.Background(), "nginx", time.Time{}); return ok && v == 2 })
	if n := g.calls.Load(); n != 2 {
		t.Errorf("%d computations, want 2", n)
	}
}

// TestCacheRemembersFailuresBriefly: a failed computation is reported, gives no value, and
// is retried after the error TTL, not at every request.
func TestCacheRemembersFailuresBriefly(t *testing.T) {
	c, g, clock, errs := newTestCache(t)
	g.failed.Store(true)
	close(g.gate)
	if _, ok := c.get(context.Background(), "nginx", later()); ok {
		t.Error("a value from a failed computation")
	}
	if errs.Load() != 1 {
		t.Errorf("%d errors reported, want 1", errs.Load())
	}
	for range 5 {
		c.get(context.Background(), "nginx", later())
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d computations within the error TTL, want 1", n)
	}
	g.failed.Store(false)
	g.value.Store(9)
	clock.Step(c.errorTTL)
	if v, ok := c.get(context.Background(), "nginx", later()); !ok || v != 9 {
		t.Errorf("after the error TTL get = %d, %t; want 9, true", v, ok)
	}
}

// TestCacheIsBounded: past maxCacheEntries, the entry that expires first makes room.
func TestCacheIsBounded(t *testing.T) {
	c, g, clock, _ := newTestCache(t)
	close(g.gate)
	for i := range maxCacheEntries + 10 {
		c.get(context.Background(), string(rune('a'+i%26))+time.Duration(i).String(), later())
		if i == 0 {
			clock.Step(time.Second) // the first entry expires first
		}
	}
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n > maxCacheEntries {
		t.Errorf("%d entries, want at most %d", n, maxCacheEntries)
	}
}
