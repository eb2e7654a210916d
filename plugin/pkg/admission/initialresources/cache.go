package initialresources

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// lookup is how a cache answered.
type lookup int

const (
	// found: a computed value (which may say "no estimate").
	found lookup = iota
	// failed: the last computation failed, and its failure is remembered for errorTTL.
	failed
	// pending: a computation runs (or waits for a slot) and did not finish before the
	// caller's deadline; its value serves the next request.
	pending
	// shed: no computation was started, because as many as the cache allows are already
	// running or waiting; the next request tries again.
	shed
)

// cacheLimits bound what a cache holds and runs. Every key is chosen by whoever creates a
// pod (an image string, a namespace, an owner reference), so nothing here may grow with
// what they send.
type cacheLimits struct {
	// entries and bytes bound what is kept; bytes as counted by the cache's size function.
	entries, bytes int
	// running is how many computations run at once; queued how many may be started and
	// not finished (running or waiting for a slot): past it a miss starts nothing. Each
	// started computation is one goroutine.
	running, queued int
}

// The limits of each of the plugin's caches. With them, a cache holds at most 4 MiB as
// counted (keys plus entryOverhead each, and the values' sizes) and has at most 16
// goroutines; the plugin has four caches (two of usage history, two of the
// VerticalPodAutoscaler source).
var defaultLimits = cacheLimits{entries: 10000, bytes: 4 << 20, running: 2, queued: 16}

// entryOverhead is what an entry is counted as beyond its key's and value's sizes: the map
// slot, the entry, its list element and its channel while computed.
const entryOverhead = 256

// cache serves values computed in the background, so that a request never waits on a
// source longer than it chooses to: a fresh value is returned at once, one past half its TTL
// is refreshed in the background while still served, and a missing or expired one is
// computed by one goroutine while requests wait for it only until their own deadline.
type cache[K comparable, V any] struct {
	ttl time.Duration
	// errorTTL is how long a failed computation is remembered, so a source that is down is
	// asked again soon, not at every request.
	errorTTL time.Duration
	// compute produces a key's value; it runs outside any request, with its own timeout,
	// once it has one of the running slots.
	compute func(context.Context, K) (V, error)
	timeout time.Duration
	// size is the bytes an entry is counted as beyond entryOverhead: its key's strings and
	// its value's.
	size   func(K, V) int
	limits cacheLimits
	now    func() time.Time
	// onError is told of each failed computation (logged and counted by the plugin).
	onError func(K, error)

	slots chan struct{}

	mu      sync.Mutex
	entries map[K]*cacheEntry[K, V]
	// order holds the entries, the least recently computed first: the first to go when
	// the cache is full.
	order    *list.List
	bytes    int
	inflight int
}

type cacheEntry[K comparable, V any] struct {
	key   K
	value V
	ok    bool // value is a computed value; false before the first one, or after a failure
	// expires ends the value's validity, or the memory of a failure.
	expires time.Time
	refresh time.Time // past it, the next get starts a refresh
	// done is closed when the running computation finishes; nil when none runs.
	done  chan struct{}
	size  int
	place *list.Element
}

func newCache[K comparable, V any](ttl, timeout time.Duration, limits cacheLimits, size func(K, V) int,
	compute func(context.Context, K) (V, error), onError func(K, error)) *cache[K, V] {
	return &cache[K, V]{
		ttl: ttl, errorTTL: min(ttl, 30*time.Second), compute: compute, timeout: timeout, size: size, limits: limits,
		now: time.Now, onError: onError, slots: make(chan struct{}, limits.running),
		entries: map[K]*cacheEntry[K, V]{}, order: list.New(),
	}
}

// get returns key's value, waiting for a computation until deadline (or ctx's end) at the
// latest. admit, when not nil, is asked before a key is first cached: false means the key
// has no value worth computing or keeping (found, with the zero value). A hit costs no
// timer and no call of admit.
func (c *cache[K, V]) get(ctx context.Context, key K, deadline time.Time, admit func(K) bool) (V, lookup) {
	var zero V
	c.mu.Lock()
	e := c.entries[key]
	if e == nil && admit != nil {
		c.mu.Unlock()
		if !admit(key) {
			return zero, found
		}
		c.mu.Lock()
		e = c.entries[key]
	}
	now := c.now()
	if e == nil {
		if e = c.insertLocked(key, now); e == nil {
			c.mu.Unlock()
			return zero, shed
		}
	}
	if now.Before(e.expires) {
		if !now.Before(e.refresh) && e.done == nil && c.inflight < c.limits.queued {
			c.startLocked(e)
		}
		v, state := e.value, stateOf(e.ok)
		c.mu.Unlock()
		return v, state
	}
	if e.done == nil {
		if c.inflight >= c.limits.queued {
			c.mu.Unlock()
			return zero, shed
		}
		c.startLocked(e)
	}
	done := e.done
	c.mu.Unlock()

	wait := time.Until(deadline)
	if wait <= 0 {
		return zero, pending
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return zero, pending
	case <-ctx.Done():
		return zero, pending
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.value, stateOf(e.ok)
}

func stateOf(ok bool) lookup {
	if ok {
		return found
	}
	return failed
}

// insertLocked adds an empty entry for key, making room for it; nil when a computation
// could not be started for it, or no room made.
func (c *cache[K, V]) insertLocked(key K, now time.Time) *cacheEntry[K, V] {
	if c.inflight >= c.limits.queued {
		return nil
	}
	var zero V
	size := entryOverhead + c.size(key, zero)
	if size > c.limits.bytes {
		return nil
	}
	// Expired entries first, then the least recently computed; never one being computed.
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		e := el.Value.(*cacheEntry[K, V])
		full := len(c.entries) >= c.limits.entries || c.bytes+size > c.limits.bytes
		if !full && now.Before(e.expires) {
			break
		}
		if e.done == nil {
			c.removeLocked(e)
		}
		el = next
	}
	if len(c.entries) >= c.limits.entries || c.bytes+size > c.limits.bytes {
		return nil
	}
	e := &cacheEntry[K, V]{key: key, size: size}
	e.place = c.order.PushBack(e)
	c.entries[key] = e
	c.bytes += size
	return e
}

func (c *cache[K, V]) removeLocked(e *cacheEntry[K, V]) {
	c.order.Remove(e.place)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// startLocked computes e's value in the background, once a slot is free, and stores it.
func (c *cache[K, V]) startLocked(e *cacheEntry[K, V]) {
	done := make(chan struct{})
	e.done = done
	c.inflight++
	go func() {
		c.slots <- struct{}{}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		v, err := c.compute(ctx, e.key)
		cancel()
		<-c.slots
		c.mu.Lock()
		now := c.now()
		if err != nil {
			c.onError(e.key, err)
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
		if c.entries[e.key] == e {
			// Recounted with its value, and the most recently computed.
			size := entryOverhead + c.size(e.key, e.value)
			c.bytes += size - e.size
			e.size = size
			c.order.MoveToBack(e.place)
			if size > c.limits.bytes {
				c.removeLocked(e) // a value larger than the whole cache is not kept
			}
			for el := c.order.Front(); el != nil && c.bytes > c.limits.bytes; {
				next := el.Next()
				if old := el.Value.(*cacheEntry[K, V]); old.done == nil || old == e {
					c.removeLocked(old)
				}
				el = next
			}
		}
		e.done = nil
		c.inflight--
		c.mu.Unlock()
		close(done)
	}()
}

// usage reports what the cache holds: entries, bytes as counted, computations started and
// not finished.
func (c *cache[K, V]) usage() (entries, bytes, inflight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes, c.inflight
}
