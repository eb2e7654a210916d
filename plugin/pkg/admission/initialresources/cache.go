package initialresources

import (
	"container/heap"
	"container/list"
	"context"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
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
	// share divides entries, bytes and queued into what one namespace may hold or have
	// started, so that one namespace's flood of distinct images neither takes every
	// lookup nor fills the cache; with a share, a namespace also runs at most half the
	// running computations (at least one), so that its slow lookups leave the others a
	// slot. 0 or 1: no share.
	share int
}

// namespaceLimits are what one namespace may hold, have started and run: at least one of
// each.
func (l cacheLimits) namespaceLimits() (entries, bytes, queued, running int) {
	if l.share <= 1 {
		return l.entries, l.bytes, l.queued, l.running
	}
	return max(l.entries/l.share, 1), max(l.bytes/l.share, 1), max(l.queued/l.share, 1), max(l.running/2, 1)
}

// The limits of each of the plugin's caches, unless the configuration sizes them. With
// them, a cache holds at most 4 MiB as counted (keys plus entryOverhead each, and the
// values' sizes) and has at most 16 goroutines, a namespace at most a quarter of each; the
// plugin has four caches (two of usage history, two of the VerticalPodAutoscaler source).
var defaultLimits = cacheLimits{entries: 10000, bytes: 4 << 20, running: 2, queued: 16, share: 4}

// entryOverhead is what an entry is counted as beyond its key's and value's sizes: the map
// slot, the entry, its list elements and its channel while computed.
const entryOverhead = 256

// cache serves values computed in the background, so that a request never waits on a
// source longer than it chooses to: a fresh value is returned at once, one past half its TTL
// is refreshed in the background while still served, and a missing or expired one is
// computed by one goroutine while requests wait for it only until their own deadline.
//
// What a cache holds is shared fairly between namespaces: each entry is charged to the
// namespace whose request inserted it, each computation to the namespace whose request
// started it. A namespace holds at most its share of the entries and bytes (past it, its
// own least recently computed entry makes room) and has at most its share of the started
// computations; a full cache makes room by expired entries first, then by the least
// recently computed entry of the namespace holding the most of it.
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
	// measure are the limits a namespace's weight is a fraction of: limits, but for the
	// unbounded build's (accounting.go).
	measure cacheLimits
	// namespaceEntries, namespaceBytes, namespaceQueued and namespaceRunning are one
	// namespace's share.
	namespaceEntries, namespaceBytes, namespaceQueued, namespaceRunning int
	now                                                                 func() time.Time
	// onError is told of each failed computation (logged and counted by the plugin).
	onError func(K, error)
	// gauges, when set, are told what the cache holds after each change.
	gauges *cacheGauges

	mu sync.Mutex
	// slotFreed is signalled when a computation stops running.
	slotFreed *sync.Cond
	running   int
	entries   map[K]*cacheEntry[K, V]
	// order holds the entries, the least recently computed first.
	order    *list.List
	bytes    int
	inflight int
	// namespaces are the namespaces holding an entry or a started computation, with what
	// they hold; heaviest orders those holding entries, the most first.
	namespaces map[string]*namespaceUsage
	heaviest   namespaceHeap
}

type cacheEntry[K comparable, V any] struct {
	key   K
	value V
	ok    bool // value is a computed value; false before the first one, or after a failure
	// expires ends the value's validity, or the memory of a failure.
	expires time.Time
	refresh time.Time // past it, the next get starts a refresh
	// done is closed when the running computation finishes; nil when none runs.
	done chan struct{}
	size int
	// owner is charged with the entry; startedBy with its running computation.
	owner, startedBy *namespaceUsage
	// place is the entry in the cache's order, ownerPlace in its owner's.
	place, ownerPlace *list.Element
}

// namespaceUsage is what one namespace holds in a cache.
type namespaceUsage struct {
	name           string
	entries, bytes int
	started        int
	running        int
	order          *list.List // its entries, the least recently computed first
	heapIndex      int        // its place in heaviest; -1 while it holds no entry
	// weightEntries and weightBytes are the cache's limits, for weight.
	weightEntries, weightBytes int
}

// weight is how much of the cache the namespace holds: the larger of its fractions of the
// entries and of the bytes, scaled to compare without division.
func (u *namespaceUsage) weight() int64 {
	return max(int64(u.entries)*int64(u.weightBytes), int64(u.bytes)*int64(u.weightEntries))
}

// namespaceHeap orders namespaces by weight, the heaviest first (container/heap).
type namespaceHeap []*namespaceUsage

func (h namespaceHeap) Len() int           { return len(h) }
func (h namespaceHeap) Less(i, j int) bool { return h[i].weight() > h[j].weight() }
func (h namespaceHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *namespaceHeap) Push(x any) {
	u := x.(*namespaceUsage)
	u.heapIndex = len(*h)
	*h = append(*h, u)
}
func (h *namespaceHeap) Pop() any {
	old := *h
	u := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	u.heapIndex = -1
	return u
}

func newCache[K comparable, V any](ttl, timeout time.Duration, limits cacheLimits, size func(K, V) int,
	compute func(context.Context, K) (V, error), onError func(K, error)) *cache[K, V] {
	// A namespace's weight and the largest share are measured against the configured
	// limits, also where they are not enforced.
	measure := limits
	if unboundedCaches {
		limits = unbounded(limits)
	}
	c := &cache[K, V]{measure: measure,
		ttl: ttl, errorTTL: min(ttl, 30*time.Second), compute: compute, timeout: timeout, size: size, limits: limits,
		now: time.Now, onError: onError,
		entries: map[K]*cacheEntry[K, V]{}, order: list.New(), namespaces: map[string]*namespaceUsage{},
	}
	c.slotFreed = sync.NewCond(&c.mu)
	c.namespaceEntries, c.namespaceBytes, c.namespaceQueued, c.namespaceRunning = limits.namespaceLimits()
	return c
}

// get returns key's value, waiting for a computation until deadline (or ctx's end) at the
// latest. namespace is the requester's: what get inserts or starts is charged to it. admit,
// when not nil, is asked before a key is first cached: false means the key has no value
// worth computing or keeping (found, with the zero value). A hit costs no timer and no call
// of admit.
func (c *cache[K, V]) get(ctx context.Context, key K, namespace string, deadline time.Time, admit func(K) bool) (V, lookup) {
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
		if e = c.insertLocked(key, namespace, now); e == nil {
			c.mu.Unlock()
			return zero, shed
		}
	}
	if now.Before(e.expires) {
		if !now.Before(e.refresh) && e.done == nil && c.mayStartLocked(namespace) {
			c.startLocked(e, namespace)
		}
		v, state := e.value, stateOf(e.ok)
		c.mu.Unlock()
		return v, state
	}
	if e.done == nil {
		if !c.mayStartLocked(namespace) {
			c.mu.Unlock()
			return zero, shed
		}
		c.startLocked(e, namespace)
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

// mayStartLocked reports whether namespace may start a computation: the cache and the
// namespace each have fewer started than they may.
func (c *cache[K, V]) mayStartLocked(namespace string) bool {
	if c.inflight >= c.limits.queued {
		return false
	}
	u := c.namespaces[namespace]
	return u == nil || u.started < c.namespaceQueued
}

// namespaceLocked returns namespace's usage, recorded when it is new.
func (c *cache[K, V]) namespaceLocked(namespace string) *namespaceUsage {
	u := c.namespaces[namespace]
	if u == nil {
		u = &namespaceUsage{name: namespace, order: list.New(), heapIndex: -1,
			weightEntries: c.measure.entries, weightBytes: c.measure.bytes}
		c.namespaces[namespace] = u
	}
	return u
}

// forgetIdleLocked drops u's record once it holds nothing and runs nothing. Every entry and
// computation refers to its namespace's record in namespaces: a record is looked up (or
// made) when it is charged, never kept across an eviction that could forget it.
func (c *cache[K, V]) forgetIdleLocked(u *namespaceUsage) {
	if u.entries == 0 && u.started == 0 && c.namespaces[u.name] == u {
		delete(c.namespaces, u.name)
	}
}

// chargeLocked adds entries and bytes to u and keeps heaviest in order.
func (c *cache[K, V]) chargeLocked(u *namespaceUsage, entries, bytes int) {
	u.entries += entries
	u.bytes += bytes
	switch {
	case u.entries == 0 && u.heapIndex >= 0:
		heap.Remove(&c.heaviest, u.heapIndex)
	case u.entries > 0 && u.heapIndex < 0:
		heap.Push(&c.heaviest, u)
	case u.heapIndex >= 0:
		heap.Fix(&c.heaviest, u.heapIndex)
	}
}

// insertLocked adds an empty entry for key, charged to namespace, making room for it; nil
// when a computation could not be started for it, or no room made.
func (c *cache[K, V]) insertLocked(key K, namespace string, now time.Time) *cacheEntry[K, V] {
	if !c.mayStartLocked(namespace) {
		return nil
	}
	var zero V
	size := entryOverhead + c.size(key, zero)
	if size > c.namespaceBytes {
		return nil
	}
	// The namespace's own share first: its least recently computed entries make room.
	if u := c.namespaces[namespace]; u != nil {
		c.evictLocked(u.order, func() bool { return u.entries >= c.namespaceEntries || u.bytes+size > c.namespaceBytes }, nil)
		if u.entries >= c.namespaceEntries || u.bytes+size > c.namespaceBytes {
			return nil
		}
	}
	// Then the whole cache: expired entries go, the least recently computed first, up to
	// the first that is not (computations finish in about the order they start, so that is
	// nearly all of them, and an insert never walks the whole cache); then the heaviest
	// namespace's.
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		e := el.Value.(*cacheEntry[K, V])
		if now.Before(e.expires) {
			break
		}
		if e.done == nil {
			c.removeLocked(e)
		}
		el = next
	}
	full := func() bool { return len(c.entries) >= c.limits.entries || c.bytes+size > c.limits.bytes }
	c.evictHeaviestLocked(full, nil)
	if full() {
		return nil
	}
	// Looked up after the evictions, which forget a namespace left with nothing.
	u := c.namespaceLocked(namespace)
	e := &cacheEntry[K, V]{key: key, size: size, owner: u}
	e.place = c.order.PushBack(e)
	e.ownerPlace = u.order.PushBack(e)
	c.entries[key] = e
	c.bytes += size
	c.chargeLocked(u, 1, size)
	c.reportLocked()
	return e
}

// evictLocked removes entries of order, the front first, while over says so; never one
// being computed, unless it is also.
func (c *cache[K, V]) evictLocked(order *list.List, over func() bool, also *cacheEntry[K, V]) {
	for el := order.Front(); el != nil && over(); {
		next := el.Next()
		if e := el.Value.(*cacheEntry[K, V]); e.done == nil || e == also {
			c.removeLocked(e)
		}
		el = next
	}
}

// evictHeaviestLocked removes the least recently computed entries of the namespace holding
// the most of the cache, then of the next, while over says so. A namespace whose every
// entry is being computed is passed over; also may be removed though it is.
func (c *cache[K, V]) evictHeaviestLocked(over func() bool, also *cacheEntry[K, V]) {
	var passed []*namespaceUsage
	for over() && c.heaviest.Len() > 0 {
		u := c.heaviest[0]
		before := u.entries
		c.evictLocked(u.order, func() bool { return over() && u.entries == before }, also)
		if u.entries == before {
			// Nothing of it could go: set it aside until the loop ends.
			heap.Remove(&c.heaviest, u.heapIndex)
			passed = append(passed, u)
		}
	}
	for _, u := range passed {
		if u.entries > 0 && u.heapIndex < 0 {
			heap.Push(&c.heaviest, u)
		}
	}
}

func (c *cache[K, V]) removeLocked(e *cacheEntry[K, V]) {
	c.order.Remove(e.place)
	e.owner.order.Remove(e.ownerPlace)
	delete(c.entries, e.key)
	c.bytes -= e.size
	c.chargeLocked(e.owner, -1, -e.size)
	c.forgetIdleLocked(e.owner)
	c.reportLocked()
}

// startLocked computes e's value in the background, once a slot is free, and stores it;
// the computation is charged to namespace until it finishes.
func (c *cache[K, V]) startLocked(e *cacheEntry[K, V], namespace string) {
	done := make(chan struct{})
	e.done = done
	c.inflight++
	e.startedBy = c.namespaceLocked(namespace)
	e.startedBy.started++
	go func() {
		by := e.startedBy
		c.mu.Lock()
		for c.running >= c.limits.running || by.running >= c.namespaceRunning {
			c.slotFreed.Wait()
		}
		c.running++
		by.running++
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		v, err := c.compute(ctx, e.key)
		cancel()
		c.mu.Lock()
		c.running--
		by.running--
		c.slotFreed.Broadcast()
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
			c.chargeLocked(e.owner, 0, size-e.size)
			e.size = size
			c.order.MoveToBack(e.place)
			e.owner.order.MoveToBack(e.ownerPlace)
			if size > c.namespaceBytes {
				c.removeLocked(e) // a value larger than a namespace's share is not kept
			} else {
				owner := e.owner
				c.evictLocked(owner.order, func() bool { return owner.bytes > c.namespaceBytes }, e)
				c.evictHeaviestLocked(func() bool { return c.bytes > c.limits.bytes }, e)
			}
			c.reportLocked()
		}
		e.done = nil
		c.inflight--
		by.started--
		c.forgetIdleLocked(by)
		e.startedBy = nil
		c.mu.Unlock()
		close(done)
	}()
}

// cacheUsage is what a cache holds.
type cacheUsage struct {
	// entries, bytes as counted, and computations started and not finished.
	entries, bytes, inflight int
	// largestEntries and largestBytes are the most any one namespace holds.
	largestEntries, largestBytes int
}

// usage reports what the cache holds.
func (c *cache[K, V]) usage() cacheUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usageLocked()
}

func (c *cache[K, V]) usageLocked() cacheUsage {
	u := cacheUsage{entries: len(c.entries), bytes: c.bytes, inflight: c.inflight}
	for _, n := range c.namespaces {
		u.largestEntries = max(u.largestEntries, n.entries)
		u.largestBytes = max(u.largestBytes, n.bytes)
	}
	return u
}

// largestShareLocked is the most of the cache any one namespace holds: the larger of its
// fractions of the entries and of the bytes allowed.
func (c *cache[K, V]) largestShareLocked() float64 {
	if c.heaviest.Len() == 0 {
		return 0
	}
	return float64(c.heaviest[0].weight()) / (float64(c.measure.entries) * float64(c.measure.bytes))
}

// cacheGauges are one cache's series of the plugin's gauges.
type cacheGauges struct {
	entries, bytes, largestShare metrics.GaugeMetric
}

// reportLocked sets the cache's gauges.
func (c *cache[K, V]) reportLocked() {
	if c.gauges == nil {
		return
	}
	c.gauges.entries.Set(float64(len(c.entries)))
	c.gauges.bytes.Set(float64(c.bytes))
	c.gauges.largestShare.Set(c.largestShareLocked())
}

// unbounded lifts the limits on what a cache keeps (entries, bytes, a namespace's share),
// for the build that shows make soak's proof of them can fail.
func unbounded(l cacheLimits) cacheLimits {
	l.entries, l.bytes, l.share = 1<<30, 1<<31, 1
	return l
}
