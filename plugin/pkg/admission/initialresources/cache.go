package initialresources

import (
	"context"
	"sync"
	"time"
)

// maxCacheEntries bounds the cache: past it, expired entries are dropped, then the oldest.
const maxCacheEntries = 10000

// cache serves values computed in the background, so that a request never waits on a
// source longer than it chooses to: a fresh value is returned at once, one past half its TTL
// is refreshed in the background while still served, and a missing or expired one is
// computed by one goroutine while requests wait for it only until their own deadline.
type cache[K comparable, V any] struct {
	ttl time.Duration
	// errorTTL is how long a failed computation is remembered, so a source that is down is
	// asked again soon, not at every request.
	errorTTL time.Duration
	// compute produces a key's value; it runs outside any request, with its own timeout.
	compute func(context.Context, K) (V, error)
	timeout time.Duration
	now     func() time.Time
	// onError is told of each failed computation (logged and counted by the plugin).
	onError func(K, error)

	mu      sync.Mutex
	entries map[K]*cacheEntry[V]
}

type cacheEntry[V any] struct {
	value V
	ok    bool // value is a computed value; false before the first one, or after a failure
	// expires ends the value's validity, or the memory of a failure.
	expires time.Time
	refresh time.Time // past it, the next get starts a refresh
	// done is closed when the running computation finishes; nil when none runs.
	done chan struct{}
}

func newCache[K comparable, V any](ttl, timeout time.Duration, compute func(context.Context, K) (V, error), onError func(K, error)) *cache[K, V] {
	return &cache[K, V]{
		ttl: ttl, errorTTL: min(ttl, 30*time.Second), compute: compute, timeout: timeout, now: time.Now, onError: onError,
		entries: map[K]*cacheEntry[V]{},
	}
}

// get returns key's value and true, waiting for a computation until deadline (or ctx's end)
// at the latest; false when there is no value yet (it is being computed for the next
// request). A hit costs no timer.
func (c *cache[K, V]) get(ctx context.Context, key K, deadline time.Time) (V, bool) {
	c.mu.Lock()
	now := c.now()
	e := c.entries[key]
	if e == nil {
		c.evictLocked(now)
		e = &cacheEntry[V]{}
		c.entries[key] = e
	}
	if now.Before(e.expires) {
		if !now.Before(e.refresh) && e.done == nil {
			c.startLocked(key, e)
		}
		v, ok := e.value, e.ok
		c.mu.Unlock()
		return v, ok
	}
	if e.done == nil {
		c.startLocked(key, e)
	}
	done := e.done
	c.mu.Unlock()

	var zero V
	wait := time.Until(deadline)
	if wait <= 0 {
		return zero, false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return zero, false
	case <-ctx.Done():
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.value, e.ok
}

// startLocked computes key's value in the background and stores it in e.
func (c *cache[K, V]) startLocked(key K, e *cacheEntry[V]) {
	done := make(chan struct{})
	e.done = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		v, err := c.compute(ctx, key)
		c.mu.Lock()
		now := c.now()
		if err != nil {
			c.onError(key, err)
			// Keep serving a value still valid; otherwise remember the failure briefly.
			if !e.ok || !now.Before(e.expires) {
				var zero V
				e.value, e.ok, e.expires = zero, false, now.Add(c.errorTTL)
			}
			e.refresh = now.Add(c.errorTTL)
		} else {
			e.value, e.ok = v, true
			e.expires, e.refresh = now.Add(c.ttl), now.Add(c.ttl/2)
		}
		e.done = nil
		c.mu.Unlock()
		close(done)
	}()
}

// evictLocked makes room for one more entry.
func (c *cache[K, V]) evictLocked(now time.Time) {
	if len(c.entries) < maxCacheEntries {
		return
	}
	var oldest K
	var oldestExpiry time.Time
	first := true
	for k, e := range c.entries {
		if e.done != nil {
			continue
		}
		if !now.Before(e.expires) {
			delete(c.entries, k)
			continue
		}
		if first || e.expires.Before(oldestExpiry) {
			oldest, oldestExpiry, first = k, e.expires, false
		}
	}
	if len(c.entries) >= maxCacheEntries && !first {
		delete(c.entries, oldest)
	}
}
