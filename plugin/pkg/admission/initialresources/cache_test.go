package initialresources

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	c := newCache(time.Minute, time.Minute, defaultLimits, func(k string, _ int32) int { return len(k) }, g.compute, func(string, error) { errs.Add(1) })
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
		if _, state := c.get(context.Background(), "nginx", "ns", time.Time{}, nil); state != pending {
			t.Fatalf("state %v before any computation finished, want pending", state)
		}
	}
	waitFor(t, "the computation to start", func() bool { return g.calls.Load() >= 1 })
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d computations for three misses, want 1", n)
	}
	close(g.gate)
	waitFor(t, "the computation to be stored", func() bool {
		v, state := c.get(context.Background(), "nginx", "ns", time.Time{}, nil)
		return state == found && v == 7
	})
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d computations, want 1", n)
	}
}

// TestCacheMissWaitsForAFastSource: a request with time left gets the value computed for it.
func TestCacheMissWaitsForAFastSource(t *testing.T) {
	c, g, _, _ := newTestCache(t)
	g.value.Store(3)
	close(g.gate)
	if v, state := c.get(context.Background(), "nginx", "ns", later(), nil); state != found || v != 3 {
		t.Errorf("get = %d, %v; want 3, found", v, state)
	}
}

// TestCacheRefreshesInTheBackground: past half its TTL a value is still served while a
// refresh runs; past its TTL unrefreshed, it is gone.
func TestCacheRefreshesInTheBackground(t *testing.T) {
	c, g, clock, _ := newTestCache(t)
	g.value.Store(1)
	gate := g.gate
	close(gate)
	if _, state := c.get(context.Background(), "nginx", "ns", later(), nil); state != found {
		t.Fatal("no value")
	}
	g.gate = make(chan struct{}) // the refresh waits
	g.value.Store(2)
	clock.Step(31 * time.Second)
	if v, state := c.get(context.Background(), "nginx", "ns", time.Time{}, nil); state != found || v != 1 {
		t.Errorf("during the refresh get = %d, %v; want the old 1", v, state)
	}
	waitFor(t, "the refresh to start", func() bool { return g.calls.Load() == 2 })
	close(g.gate)
	waitFor(t, "the refreshed value", func() bool {
		v, state := c.get(context.Background(), "nginx", "ns", time.Time{}, nil)
		return state == found && v == 2
	})
	if n := g.calls.Load(); n != 2 {
		t.Errorf("%d computations, want 2", n)
	}
}

// TestCacheRemembersFailuresBriefly: a failed computation is reported, gives no value and
// says so (failed, not pending: nothing is running for the next pod), and is retried after
// the error TTL, not at every request.
func TestCacheRemembersFailuresBriefly(t *testing.T) {
	c, g, clock, errs := newTestCache(t)
	g.failed.Store(true)
	close(g.gate)
	if _, state := c.get(context.Background(), "nginx", "ns", later(), nil); state != failed {
		t.Errorf("state %v after a failed computation, want failed", state)
	}
	if errs.Load() != 1 {
		t.Errorf("%d errors reported, want 1", errs.Load())
	}
	for range 5 {
		if _, state := c.get(context.Background(), "nginx", "ns", later(), nil); state != failed {
			t.Errorf("a remembered failure answered %v, want failed", state)
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d computations within the error TTL, want 1", n)
	}
	g.failed.Store(false)
	g.value.Store(9)
	clock.Step(c.errorTTL)
	if v, state := c.get(context.Background(), "nginx", "ns", later(), nil); state != found || v != 9 {
		t.Errorf("after the error TTL get = %d, %v; want 9, found", v, state)
	}
}

// TestCacheBounds: whatever keys arrive, the cache holds no more entries nor bytes than
// its limits, runs no more computations at once than its running limit, starts no more
// than its queued limit (the rest are shed, and tried again by a later request), and never
// keeps what admit refuses.
func TestCacheBounds(t *testing.T) {
	tests := []struct {
		name    string
		limits  cacheLimits
		keys    func(i int) string
		admit   func(string) bool
		n       int
		stuck   bool // the computations never finish during the flood
		wantMax int  // the most entries kept
	}{
		{name: "entries", limits: cacheLimits{entries: 50, bytes: 1 << 20, running: 2, queued: 8},
			keys: func(i int) string { return fmt.Sprintf("img-%d", i) }, n: 500, wantMax: 50},
		{name: "bytes: long keys", limits: cacheLimits{entries: 1000, bytes: 64 << 10, running: 2, queued: 8},
			keys: func(i int) string { return fmt.Sprintf("%d-%s", i, strings.Repeat("x", 4000)) }, n: 500, wantMax: (64 << 10) / (entryOverhead + 4000)},
		{name: "a key larger than the cache is never kept", limits: cacheLimits{entries: 1000, bytes: 4096, running: 2, queued: 8},
			keys: func(i int) string { return strings.Repeat("y", 5000+i) }, n: 50, wantMax: 0},
		{name: "refused by admit: nothing kept nor computed", limits: cacheLimits{entries: 1000, bytes: 1 << 20, running: 2, queued: 8},
			keys: func(i int) string { return fmt.Sprintf("Not An Image %d", i) }, admit: func(string) bool { return false }, n: 500, wantMax: 0},
		{name: "computations stuck: in flight bounded, the rest shed", limits: cacheLimits{entries: 1000, bytes: 1 << 20, running: 2, queued: 8},
			keys: func(i int) string { return fmt.Sprintf("img-%d", i) }, n: 500, stuck: true, wantMax: 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var running, most atomic.Int32
			gate := make(chan struct{})
			if !tc.stuck {
				close(gate)
			}
			compute := func(ctx context.Context, _ string) (int32, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return 1, nil
			}
			c := newCache(time.Minute, time.Minute, tc.limits, func(k string, _ int32) int { return len(k) }, compute, func(string, error) {})
			shedSeen := false
			for i := range tc.n {
				deadline := later()
				if tc.stuck {
					deadline = time.Time{} // no wait: the computations never finish
				}
				_, state := c.get(context.Background(), tc.keys(i), "ns", deadline, tc.admit)
				shedSeen = shedSeen || state == shed
				u := c.usage()
				if u.entries > tc.limits.entries || u.bytes > tc.limits.bytes || u.inflight > tc.limits.queued || int(most.Load()) > tc.limits.running {
					t.Fatalf("after %d keys: %d entries, %d bytes, %d in flight, %d running at once; limits %+v",
						i+1, u.entries, u.bytes, u.inflight, most.Load(), tc.limits)
				}
			}
			if u := c.usage(); u.entries > tc.wantMax {
				t.Errorf("%d entries kept, want at most %d", u.entries, tc.wantMax)
			}
			if tc.stuck {
				if !shedSeen {
					t.Error("no lookup was shed while the computations were stuck")
				}
				close(gate)
				waitFor(t, "the stuck computations to finish", func() bool { return c.usage().inflight == 0 })
				if _, state := c.get(context.Background(), "img-fresh", "ns", later(), nil); state != found {
					t.Errorf("after the flood a new key answered %v, want found", state)
				}
			}
		})
	}
}

// TestCacheExpiredEntriesGo: once expired, entries are dropped as new ones arrive, so the
// cache shrinks back after a flood.
func TestCacheExpiredEntriesGo(t *testing.T) {
	c, g, clock, _ := newTestCache(t)
	close(g.gate)
	for i := range 100 {
		c.get(context.Background(), fmt.Sprintf("img-%d", i), "ns", later(), nil)
	}
	clock.Step(2 * time.Minute)
	c.get(context.Background(), "after", "ns", later(), nil)
	if u := c.usage(); u.entries != 1 {
		t.Errorf("%d entries after the TTL, want only the new one", u.entries)
	}
}

// TestCacheNamespaceShares: one namespace's flood of distinct keys takes no more than its
// share of the entries, the bytes and the started computations; a full cache makes room
// from the namespace holding the most, so a namespace that holds little keeps what it has
// whatever the others send.
func TestCacheNamespaceShares(t *testing.T) {
	limits := cacheLimits{entries: 400, bytes: 1 << 20, running: 2, queued: 16, share: 4}
	size := func(k string, _ int32) int { return len(k) }
	instant := func(context.Context, string) (int32, error) { return 1, nil }
	nsEntries, _, nsQueued, _ := limits.namespaceLimits()

	t.Run("one namespace's flood stays within its share of entries", func(t *testing.T) {
		c := newCache(time.Minute, time.Minute, limits, size, instant, func(string, error) {})
		for i := range 1000 {
			c.get(context.Background(), fmt.Sprintf("img-%d", i), "flood", later(), nil)
		}
		if u := c.usage(); u.entries != nsEntries || u.largestEntries != nsEntries {
			t.Errorf("the flood keeps %d entries (its namespace %d), want its share, %d", u.entries, u.largestEntries, nsEntries)
		}
		// Its newest keys are kept: its own oldest made room.
		if _, state := c.get(context.Background(), "img-999", "flood", time.Time{}, nil); state != found {
			t.Errorf("its newest key answered %v, want found", state)
		}
	})
	t.Run("one namespace's flood stays within its share of bytes", func(t *testing.T) {
		limits := cacheLimits{entries: 10000, bytes: 64 << 10, running: 2, queued: 16, share: 4}
		_, nsBytes, _, _ := limits.namespaceLimits()
		c := newCache(time.Minute, time.Minute, limits, size, instant, func(string, error) {})
		for i := range 1000 {
			c.get(context.Background(), fmt.Sprintf("%d-%s", i, strings.Repeat("x", 500)), "flood", later(), nil)
		}
		u := c.usage()
		if u.bytes > nsBytes || u.bytes < nsBytes-(entryOverhead+510) {
			t.Errorf("the flood keeps %d bytes, want its share, %d, within one entry", u.bytes, nsBytes)
		}
	})
	t.Run("a quiet namespace keeps its entry through everyone else's floods", func(t *testing.T) {
		c := newCache(time.Minute, time.Minute, limits, size, instant, func(string, error) {})
		c.get(context.Background(), "quiet-img", "quiet", later(), nil)
		for i := range 3000 {
			c.get(context.Background(), fmt.Sprintf("img-%d", i), fmt.Sprintf("flood-%d", i%6), later(), nil)
		}
		u := c.usage()
		if u.entries != limits.entries || u.largestEntries > nsEntries {
			t.Errorf("%d entries, the largest namespace %d; want the cache full (%d) and no namespace over %d", u.entries, u.largestEntries, limits.entries, nsEntries)
		}
		if _, state := c.get(context.Background(), "quiet-img", "quiet", time.Time{}, nil); state != found {
			t.Errorf("the quiet namespace's entry answered %v after the floods, want found", state)
		}
	})
	t.Run("a namespace whose last entry expires keeps one record and one share", func(t *testing.T) {
		limits := cacheLimits{entries: 16, bytes: 1 << 20, running: 2, queued: 16, share: 4}
		c := newCache(time.Minute, time.Minute, limits, size, instant, func(string, error) {})
		clock := &fakeClock{now: fixedNow}
		c.now = clock.Now
		c.get(context.Background(), "k0", "a", later(), nil)
		clock.Step(2 * time.Minute)
		// k0 expired: inserting k1 removes it, the namespace's only entry.
		for i := 1; i < 10; i++ {
			c.get(context.Background(), fmt.Sprintf("k%d", i), "a", later(), nil)
			if u := c.usage(); u.entries > 4 {
				t.Fatalf("after k%d the namespace keeps %d entries, over its share of 4", i, u.entries)
			}
		}
		clock.Step(2 * time.Minute)
		for i := 10; i < 20; i++ {
			c.get(context.Background(), fmt.Sprintf("k%d", i), "a", later(), nil)
			c.mu.Lock()
			records := len(c.namespaces)
			c.mu.Unlock()
			if u := c.usage(); u.entries > 4 || records != 1 {
				t.Fatalf("after k%d the namespace keeps %d entries in %d records, want at most 4 in one", i, u.entries, records)
			}
		}
	})
	t.Run("one namespace's stuck lookups leave the others theirs", func(t *testing.T) {
		gate := make(chan struct{})
		stuck := func(ctx context.Context, k string) (int32, error) {
			if strings.HasPrefix(k, "stuck-") {
				select {
				case <-gate:
				case <-ctx.Done():
				}
			}
			return 1, nil
		}
		c := newCache(time.Minute, time.Minute, limits, size, stuck, func(string, error) {})
		refused := 0
		for i := range 100 {
			if _, state := c.get(context.Background(), fmt.Sprintf("stuck-%d", i), "flood", time.Time{}, nil); state == shed {
				refused++
			}
		}
		if u := c.usage(); u.inflight != nsQueued || refused != 100-nsQueued {
			t.Errorf("%d started, %d shed; want the namespace's share started (%d) and the rest shed", u.inflight, refused, nsQueued)
		}
		if v, state := c.get(context.Background(), "other-img", "other", later(), nil); state != found || v != 1 {
			t.Errorf("another namespace's lookup answered %d, %v while the flood's were stuck; want 1, found", v, state)
		}
		close(gate)
		waitFor(t, "the stuck lookups to finish", func() bool { return c.usage().inflight == 0 })
	})
}
