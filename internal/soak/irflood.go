package soak

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	admissionv1alpha1 "github.com/portcullis-k8s/portcullis/pkg/apis/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
)

// The InitialResources flood: our server with InitialResources alone enabled (the chain's
// stock plugins as they are), reading a Prometheus stand-in on loopback that answers every
// query at once with samples (too few in a namespace, enough anywhere, so both usage
// history caches fill); then dry-run pod creates from several namespaces, each with an
// image of its own, in two passes: short references, which fill the caches to their entry
// bound, and long ones, which fill them to their byte bound. The caches' gauges must reach
// each bound and never pass it; a quiet namespace's estimate, cached before the floods,
// must survive them; the server's goroutines and RSS must grow by no more than ceilings
// derived from the plugin's documented bounds (docs/plugins/initialresources.md, "Bounds"
// and "Sizing"; cacheLimits in plugin/pkg/admission/initialresources/cache.go, maxSamples in
// its prometheus.go). A server built with the tag portcullis_unbounded_caches (the caches
// keep whatever they are given) must fail the same checks: the proof can fail.
const (
	// irCaches are the plugin's caches: usage history per image and namespace, per image
	// for any namespace, and the VerticalPodAutoscaler source's two.
	irCaches = 4
	// irStartedPerCache are the lookups a cache has started and not finished (running or
	// waiting for a slot), one goroutine each.
	irStartedPerCache = 16
	// irRunningPerCache are the lookups a cache runs at once.
	irRunningPerCache = 2
	// irPrometheusCaches are the caches whose lookups query Prometheus (the two of usage
	// history).
	irPrometheusCaches = 2
	// irSampleBytes is what one running lookup keeps of samples (524,288 samples of 8
	// bytes).
	irSampleBytes = 4 << 20
	// irEntryOverhead is what a cache counts an entry as beyond its key and value; an
	// entry of the flood is at most that, a reference of 1,024 bytes and a namespace.
	irEntryOverhead = 256
	irMaxEntryBytes = irEntryOverhead + 1024 + 63
	// irShare is the most of a cache one namespace may keep.
	irShare = 0.25

	// IRFloodMaxQueries is the most queries the stand-in may hold at once: the Prometheus
	// caches' running lookups, each sending one query at a time.
	IRFloodMaxQueries = irPrometheusCaches * irRunningPerCache
	// irPluginGoroutines is the plugin's bound on goroutines of its own: 64.
	irPluginGoroutines = irCaches * irStartedPerCache
	// irClientGoroutines are the Prometheus client's: a read and a write loop per
	// connection, one connection per query held, and the transport's two idle ones.
	irClientGoroutines = 2 * (IRFloodMaxQueries + 2)
	// irGoroutineMargin is for the server's own goroutines that come and go whatever the
	// plugin does (the flood's last requests finishing, the readings' own requests, timers,
	// watch and informer work): about the plugin's own bound again.
	irGoroutineMargin = 64
	// IRFloodGoroutineCeiling bounds the server's goroutine growth from before the flood
	// (after the control pass) to its end: 64 + 12 + 64 = 140.
	IRFloodGoroutineCeiling = irPluginGoroutines + irClientGoroutines + irGoroutineMargin
	// irGoroutinesPerRequest bounds what one request in flight adds (the HTTP/2 stream's
	// handler, the timeout filter's goroutine, and what the admission chain starts).
	irGoroutinesPerRequest = 8
)

// The gauges of the caches the flood fills, as their cache label names them.
var irFloodCaches = []string{"history", "cluster"}

// IRFloodPeakGoroutineCeiling bounds the growth at its peak during the flood, which also
// counts the flood's requests in flight: one per client.
func IRFloodPeakGoroutineCeiling(clients int) int {
	return IRFloodGoroutineCeiling + clients*irGoroutinesPerRequest
}

// irPluginBytes is what the plugin may hold by its documented bounds with caches of
// cacheBytes each: its four caches and the samples of the Prometheus caches' four running
// lookups (4 MiB each).
func irPluginBytes(cacheBytes int) int64 {
	return irCaches*int64(cacheBytes) + 2*IRFloodMaxQueries*irSampleBytes
}

// IRFloodRSSCeiling bounds the server's RSS growth over the flood: the plugin's bound
// twice (Go's collector, at GOGC=100, lets the heap reach twice what is live before it
// collects), plus 32 MiB for the allocator and the flood's own garbage beyond the control
// pass's: 128 MiB with the default 4 MiB caches.
func IRFloodRSSCeiling(cacheBytes int) int64 { return 2*irPluginBytes(cacheBytes) + 32<<20 }

// The flood's namespaces: irFloodNamespaces() are the ones that flood; irQuietNamespace
// creates one pod of one image before and after.
const (
	irFloodNamespacePrefix = "irflood-"
	irQuietNamespace       = "irquiet"
	irQuietImage           = "registry.example/quiet/app:v1"
)

// IRFloodOptions size the InitialResources flood.
type IRFloodOptions struct {
	// Images is how many dry-run pod creates the control pass sends, and the most each of
	// the flood's two passes sends (each stops a fifth of CacheEntries after the caches
	// reached the bound it fills), each with an image string of its own. 0 skips the case.
	Images int
	// Namespaces send them: half in the first (the greedy namespace, past its share), the
	// rest in turn in the others.
	Namespaces int
	// Clients send them, each on its own connection, in a closed loop.
	Clients int
	// Timeout bounds each pass; creates still unsent when it passes are not sent.
	Timeout time.Duration
	// CacheEntries and CacheBytes are the plugin's cacheEntries and cacheBytes.
	CacheEntries, CacheBytes int
	// Unbounded runs the flood on kube-apiserver-unbounded-caches (built with the tag
	// portcullis_unbounded_caches), whose caches keep everything: its checks must fail.
	Unbounded bool
}

// IRFloodResult is what the flood measured.
type IRFloodResult struct {
	Options IRFloodOptions
	// Mix counts a flood pass's image strings by kind (imageKinds).
	Mix map[string]int
	// Control is the pass before the flood: the same number of pods, image strings of the
	// same kinds, but every container sets its requests, so the plugin looks nothing up.
	// It brings the server to the state the request load alone leads to. Short and Long
	// are the flood's passes, of short and of long references.
	Control, Short, Long FloodPass
	// Before is read after the control pass, After right after the last pass's answer.
	Before, After ServerUsage
	// Peak is the most read during the flood (RSS every 100 ms, the rest every 300 ms, and
	// After).
	Peak ServerUsage
	// AfterShort and AfterLong are the caches read after each pass.
	AfterShort, AfterLong map[string]CacheReading
	// QuietBefore and QuietAfter say whether the quiet namespace's pod got its estimate
	// before the flood (from the stand-in) and after it (from the cache: the stand-in then
	// fails every query).
	QuietBefore, QuietAfter bool
	// Queries is how many queries the stand-in received; MaxHeld the most it held at once.
	Queries int64
	MaxHeld int
	// Shed, Unfinished and SourceErrors are the growth of the plugin's counters
	// (portcullis_initialresources_*_total{source="Prometheus"}) over the flood.
	Shed, Unfinished, SourceErrors float64
	Panics                         PanicLines
	Dir                            string
}

// CacheReading is what a cache's gauges said.
type CacheReading struct {
	Entries, Bytes float64
	// LargestShare is portcullis_initialresources_cache_largest_namespace_share.
	LargestShare float64
}

// ServerUsage is what the server held at one reading.
type ServerUsage struct {
	Goroutines int
	// RSS is VmRSS from /proc/<pid>/status, in bytes; HWM is VmHWM, the most it ever was.
	RSS, HWM uint64
	// Caches are the caches' gauges, by cache.
	Caches map[string]CacheReading
}

// FloodPass is one pass of dry-run creates.
type FloodPass struct {
	Sent, Admitted int
	// Failures counts the failed creates by status and reason.
	Failures          map[string]int
	Started, Finished time.Time
}

// Elapsed is the pass's duration.
func (p FloodPass) Elapsed() time.Duration { return p.Finished.Sub(p.Started) }

// Rate is the pass's creates per second.
func (p FloodPass) Rate() float64 {
	if s := p.Elapsed().Seconds(); s > 0 {
		return float64(p.Sent) / s
	}
	return 0
}

// GoroutineGrowth, RSSGrowth and the peaks' are the growth over the flood.
func (r *IRFloodResult) GoroutineGrowth() int { return r.After.Goroutines - r.Before.Goroutines }

func (r *IRFloodResult) PeakGoroutineGrowth() int { return r.Peak.Goroutines - r.Before.Goroutines }

func (r *IRFloodResult) RSSGrowth() int64 { return int64(r.After.RSS) - int64(r.Before.RSS) }

func (r *IRFloodResult) PeakRSSGrowth() int64 { return int64(r.Peak.RSS) - int64(r.Before.RSS) }

// failures lists every check the flood failed.
func (r *IRFloodResult) failures() []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, "InitialResources flood: "+fmt.Sprintf(format, args...))
	}
	o := r.Options
	// The control pass sends every image; the others stop once they filled the caches
	// (checked below).
	if unsent := o.Images - r.Control.Sent; unsent > 0 {
		add("control pass: %d creates not sent within %s", unsent, o.Timeout)
	}
	for _, pass := range []struct {
		name string
		p    FloodPass
	}{{"control pass", r.Control}, {"short references", r.Short}, {"long references", r.Long}} {
		if n := pass.p.Sent - pass.p.Admitted; n > 0 {
			add("%s: %d dry-run creates failed (%s); the plugin never refuses a pod", pass.name, n, formatCounts(pass.p.Failures))
		}
	}
	for _, c := range irFloodCaches {
		peak, short, long := r.Peak.Caches[c], r.AfterShort[c], r.AfterLong[c]
		if peak.Entries > float64(o.CacheEntries) {
			add("the %s cache kept %.0f entries, over its bound of %d", c, peak.Entries, o.CacheEntries)
		}
		if peak.Bytes > float64(o.CacheBytes) {
			add("the %s cache kept %s, over its bound of %s", c, formatMiB(int64(peak.Bytes)), formatMiB(int64(o.CacheBytes)))
		}
		if short.Entries < float64(o.CacheEntries) {
			add("the short references left the %s cache at %.0f entries, under its bound of %d: the flood did not reach it", c, short.Entries, o.CacheEntries)
		}
		if long.Bytes < float64(o.CacheBytes-irMaxEntryBytes) {
			add("the long references left the %s cache at %s, more than an entry under its bound of %s: the flood did not reach it", c, formatMiB(int64(long.Bytes)), formatMiB(int64(o.CacheBytes)))
		}
		if peak.LargestShare > irShare {
			add("one namespace kept %.3f of the %s cache, over its share of %.2f", peak.LargestShare, c, irShare)
		}
	}
	if !r.QuietBefore {
		add("the quiet namespace's pod got no estimate before the flood: nothing to keep")
	} else if !r.QuietAfter {
		add("the quiet namespace's estimate did not survive the other namespaces' flood")
	}
	if g := r.GoroutineGrowth(); g > IRFloodGoroutineCeiling {
		add("goroutines grew by %d, over the ceiling of %d", g, IRFloodGoroutineCeiling)
	}
	if g, c := r.PeakGoroutineGrowth(), IRFloodPeakGoroutineCeiling(o.Clients); g > c {
		add("goroutines grew by %d at the flood's peak, over the ceiling of %d", g, c)
	}
	if g, c := r.PeakRSSGrowth(), IRFloodRSSCeiling(o.CacheBytes); g > c {
		add("RSS grew by %s at the flood's peak, over the ceiling of %s", formatMiB(g), formatMiB(c))
	}
	if r.MaxHeld > IRFloodMaxQueries {
		add("the stand-in held %d queries at once, more than the %d the plugin runs", r.MaxHeld, IRFloodMaxQueries)
	}
	if r.Queries == 0 {
		add("the plugin sent the stand-in no query: the flood measured nothing")
	}
	if r.Panics.Count > 0 {
		add("%d panics in the logs, the first: %s", r.Panics.Count, r.Panics.First[0])
	}
	return out
}

// ProofFailures lists what the flood on the server with unbounded caches failed to show:
// its checks of the entry and byte bounds and of the namespace's share must fail there, or
// they prove nothing.
func (r *IRFloodResult) ProofFailures() []string {
	failed := r.failures()
	var out []string
	// The entry bound's check says "… entries, over its bound", the byte bound's "… MiB,
	// over its bound", the namespace's share's "… over its share".
	for _, bound := range []string{"entries, over its bound", "MiB, over its bound", "over its share"} {
		if !slices.ContainsFunc(failed, func(f string) bool { return strings.Contains(f, bound) }) {
			out = append(out, fmt.Sprintf("InitialResources flood on %s: no check failed with %q: the proof of the caches' bounds cannot fail", UnboundedBinary, bound))
		}
	}
	return out
}

// RunIRFlood runs the InitialResources flood alone, as Run does with opts.IRFlood.Images set.
func RunIRFlood(ctx context.Context, opts Options) (*IRFloodResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid options: %w", err)
	}
	if opts.IRFlood.Images < 1 {
		return nil, errors.New("invalid options: the flood needs at least one image")
	}
	env := newEnvironment(opts)
	if err := env.writePKI(); err != nil {
		return nil, err
	}
	return env.runIRFlood(ctx)
}

// UnboundedBinary is the server built with the tag portcullis_unbounded_caches.
const UnboundedBinary = "kube-apiserver-unbounded-caches"

// irFloodConfig is make run's configuration with the stand-in as the plugin's Prometheus
// (the plugin's defaults: both sources, 100 ms miss wait, 10 s query timeout) and the
// caches sized as the options say.
func irFloodConfig(o IRFloodOptions, prometheusURL string) (string, error) {
	config := controlplane.AdmissionConfig(false, prometheusURL)
	sized := strings.NewReplacer(
		fmt.Sprintf("cacheEntries: %d\n", admissionv1alpha1.DefaultCacheEntries), fmt.Sprintf("cacheEntries: %d\n", o.CacheEntries),
		fmt.Sprintf("cacheBytes: %s\n", admissionv1alpha1.DefaultCacheBytes), fmt.Sprintf("cacheBytes: %d\n", o.CacheBytes),
	).Replace(config)
	if o.CacheEntries != int(admissionv1alpha1.DefaultCacheEntries) && sized == config {
		return "", errors.New("make run's InitialResources entry spells out no cacheEntries to size")
	}
	return sized, nil
}

// runIRFlood starts etcd, the stand-in and our server, then runs the control pass and the
// flood, reading the server's usage around and during the flood.
func (e *environment) runIRFlood(ctx context.Context) (result *IRFloodResult, err error) {
	o := e.opts.IRFlood
	dir := filepath.Join(e.opts.WorkDir, "irflood")
	binary := e.binaries[Ours]
	if o.Unbounded {
		binary = filepath.Join(e.opts.BinDir, UnboundedBinary)
		dir += "-unbounded"
	}
	for _, b := range []string{e.etcdBinary, binary} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("the flood needs %s: %w", b, err)
		}
	}
	result = &IRFloodResult{Options: o, Dir: dir}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
	}()

	prom := startInstantPrometheus()
	stops = append(stops, prom.close)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	configText, err := irFloodConfig(o, prom.url())
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "admission-config.yaml")
	if err := os.WriteFile(config, []byte(configText), 0o600); err != nil {
		return nil, err
	}
	etcd, err := startEtcdMember(ctx, e.etcdBinary, filepath.Join(dir, "etcd"), false)
	if err != nil {
		return nil, err
	}
	stops = append(stops, etcd.stop)
	setup := serverSetup{binary: binary, kind: Ours, pki: e.pki, etcdURL: etcd.clientURL,
		admissionConfig: config, plugins: []string{initialresources.PluginName}}
	server, err := startAPIServer(ctx, setup, filepath.Join(dir, "apiserver"))
	if err != nil {
		return nil, err
	}
	stops = append(stops, server.stop)
	namespaces := irFloodNamespaces(o.Namespaces)
	if err := prepareIRFlood(ctx, server.client, append([]string{irQuietNamespace}, namespaces...)); err != nil {
		return nil, err
	}
	clients, err := controlplane.Clients(server.admin, o.Clients)
	if err != nil {
		return nil, err
	}

	pid := server.process.Pid()
	e.progressf("InitialResources flood: control pass, %d dry-run creates (requests set) from %d clients", o.Images, o.Clients)
	control := newUsageSampler(ctx, server, pid)
	result.Control = floodPass(ctx, clients, namespaces, "control", o.Images, true, o.Timeout, nil)
	control.stop()
	if result.QuietBefore, err = quietEstimate(ctx, server.client, true); err != nil {
		return nil, err
	}
	if result.Before, err = readUsage(ctx, server, pid); err != nil {
		return nil, err
	}
	before, err := readMetrics(ctx, server)
	if err != nil {
		return nil, err
	}

	e.progressf("InitialResources flood: %d dry-run creates with distinct short references, then as many long ones, from %d namespaces and %d clients", o.Images, o.Namespaces, o.Clients)
	sampler := newUsageSampler(ctx, server, pid)
	// Each pass sends until the caches reach the bound it fills, and a fifth of the entries
	// more (eviction at the bound), or until its images run out: the plugin sheds what it
	// cannot look up at once, so a fixed number of images may not fill them on a slow
	// machine.
	entriesReached := func(c map[string]CacheReading) bool {
		return !slices.ContainsFunc(irFloodCaches, func(name string) bool { return c[name].Entries < float64(o.CacheEntries) })
	}
	bytesReached := func(c map[string]CacheReading) bool {
		return !slices.ContainsFunc(irFloodCaches, func(name string) bool { return c[name].Bytes < float64(o.CacheBytes-irMaxEntryBytes) })
	}
	extra := o.CacheEntries / 5
	result.Short = floodPass(ctx, clients, namespaces, "short", o.Images, false, o.Timeout, &fillTarget{server: server, reached: entriesReached, extra: extra})
	if result.AfterShort, err = readCaches(ctx, server); err != nil {
		return nil, err
	}
	result.Long = floodPass(ctx, clients, namespaces, "long", o.Images, false, o.Timeout, &fillTarget{server: server, reached: bytesReached, extra: extra})
	peak := sampler.stop()
	if result.After, err = readUsage(ctx, server, pid); err != nil {
		return nil, err
	}
	result.AfterLong = result.After.Caches
	after, err := readMetrics(ctx, server)
	if err != nil {
		return nil, err
	}
	result.Peak = maxUsage(peak, result.After)
	result.Peak.HWM = result.After.HWM
	prom.fail()
	if result.QuietAfter, err = quietEstimate(ctx, server.client, false); err != nil {
		return nil, err
	}
	result.Mix = map[string]int{}
	for i := range o.Images {
		_, kind := floodImage("short", i)
		result.Mix[kind]++
	}
	result.Queries, result.MaxHeld = prom.counts()
	for _, m := range []struct {
		name string
		into *float64
	}{{"lookups_shed_total", &result.Shed}, {"lookups_unfinished_total", &result.Unfinished}, {"source_errors_total", &result.SourceErrors}} {
		series := fmt.Sprintf(`portcullis_initialresources_%s{source="Prometheus"}`, m.name)
		*m.into = after[series] - before[series]
	}
	result.Panics, err = FindPanics(server.logFile(), filepath.Join(etcd.dir, "etcd.log"))
	e.progressf("  InitialResources flood: %d + %d of %d admitted in %s + %s; caches %s; goroutines %d → %d (peak %d), RSS %s → %s (peak %s); %d queries, at most %d held",
		result.Short.Admitted, result.Long.Admitted, o.Images, result.Short.Elapsed().Round(time.Millisecond), result.Long.Elapsed().Round(time.Millisecond),
		describeCaches(result.Peak.Caches), result.Before.Goroutines, result.After.Goroutines, result.Peak.Goroutines,
		formatMiB(int64(result.Before.RSS)), formatMiB(int64(result.After.RSS)), formatMiB(int64(result.Peak.RSS)), result.Queries, result.MaxHeld)
	return result, err
}

func irFloodNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", irFloodNamespacePrefix, i)
	}
	return out
}

// prepareIRFlood creates the namespaces and their default ServiceAccounts (no controller
// manager runs), then waits until a dry-run create of a flood pod is admitted.
func prepareIRFlood(ctx context.Context, client kubernetes.Interface, namespaces []string) error {
	for _, ns := range namespaces {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the default ServiceAccount of %s: %w", ns, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		_, err := client.CoreV1().Pods(namespaces[len(namespaces)-1]).Create(ctx, floodPod("probe", 0, true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("a dry-run create in %s is not admitted within %s: %w", namespaces[len(namespaces)-1], readyTimeout, err)
		case <-ticker.C:
		}
	}
}

// quietEstimate dry-runs the quiet namespace's pod and reports whether the plugin set its
// requests. Before the flood (wait) it tries again until the estimate, found by a lookup
// that outlived the miss wait, is cached; after it, once.
func quietEstimate(ctx context.Context, client kubernetes.Interface, wait bool) (bool, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: irQuietImage}}}}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		got, err := client.CoreV1().Pods(irQuietNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, fmt.Errorf("the quiet namespace's dry-run create: %w", err)
		}
		if _, set := got.Annotations[initialresources.Annotation]; set || !wait {
			return set, nil
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-ticker.C:
		}
	}
}

// The kinds of the flood's image strings, as IRFloodResult.Mix counts them: three
// quarters of them references the plugin looks up.
const (
	IRFloodImageReference  = "references"
	IRFloodImageOverLimit  = "1,100-byte strings (over the limit)"
	IRFloodImageUnparsable = "strings that do not parse"
)

// imageKinds lists them in the report's order.
var imageKinds = []string{IRFloodImageReference, IRFloodImageOverLimit, IRFloodImageUnparsable}

// irLongPath makes the long pass's references about 240 bytes (a name may have 255).
var irLongPath = strings.Repeat("x", 190)

// floodImage is the i-th image string of a pass, distinct from every other pass's and
// index's: three quarters references the plugin looks up (about 50 bytes in the short
// pass, 240 in the long one), an eighth strings just over its 1,024-byte limit, an eighth
// strings that do not parse. None has leading or trailing space, the only thing the pod's
// validation checks of an image.
func floodImage(pass string, i int) (image, kind string) {
	switch i % 8 {
	case 3:
		return longImage(pass, i, 1100), IRFloodImageOverLimit
	case 7:
		return fmt.Sprintf("Not A Reference/%s#%06d", pass, i), IRFloodImageUnparsable
	}
	if pass == "long" {
		return fmt.Sprintf("registry.example:5000/%s/%s/app-%06d:v%d", pass, irLongPath, i, i%3), IRFloodImageReference
	}
	return fmt.Sprintf("registry.example:5000/%s/app-%06d:v%d", pass, i, i%3), IRFloodImageReference
}

// longImage is a lowercase, reference-like string of exactly n bytes.
func longImage(pass string, i, n int) string {
	head := fmt.Sprintf("registry.example/%s/%06d/", pass, i)
	return head + strings.Repeat("x", n-len(head))
}

// floodPod is the i-th pod of a pass; withRequests sets the container's cpu and memory
// requests, so that the plugin has nothing to estimate.
func floodPod(pass string, i int, withRequests bool) *corev1.Pod {
	image, _ := floodImage(pass, i)
	c := corev1.Container{Name: "app", Image: image}
	if withRequests {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("10m"), corev1.ResourceMemory: apiresource.MustParse("16Mi")}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%06d", pass, i)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

// floodNamespace is the namespace of a pass's i-th pod: every other one in the first, the
// greedy namespace, whose half of the flood is far past its share of the caches; the rest in
// turn in the others, each under its share.
func floodNamespace(namespaces []string, i int) string {
	if i%2 == 0 || len(namespaces) == 1 {
		return namespaces[0]
	}
	return namespaces[1+(i/2)%(len(namespaces)-1)]
}

// fillTarget ends a pass once the caches reached what it fills, and extra creates more.
type fillTarget struct {
	server  *apiServer
	reached func(map[string]CacheReading) bool
	extra   int
}

// floodPass sends n dry-run creates of the pass's pods from the clients, each in a closed
// loop, the i-th in floodNamespace(namespaces, i), within timeout; with fill, it ends
// fill.extra creates after the caches' gauges (read every 250 ms) say fill.reached.
func floodPass(ctx context.Context, clients []kubernetes.Interface, namespaces []string, pass string, n int, withRequests bool, timeout time.Duration, fill *fillTarget) FloodPass {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		next     atomic.Int64
		limit    atomic.Int64
		mu       sync.Mutex
		sent     int
		admitted int
		wg       sync.WaitGroup
	)
	limit.Store(int64(n))
	failures := map[string]int{}
	started := time.Now()
	if fill != nil {
		watch, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			ticker := time.NewTicker(250 * time.Millisecond)
			defer ticker.Stop()
			for {
				select {
				case <-watch.Done():
					return
				case <-ticker.C:
				}
				if caches, err := readCaches(watch, fill.server); err == nil && fill.reached(caches) {
					limit.Store(min(int64(n), next.Load()+int64(fill.extra)))
					return
				}
			}
		}()
	}
	for _, client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= int(limit.Load()) {
					return
				}
				_, err := client.CoreV1().Pods(floodNamespace(namespaces, i)).Create(ctx, floodPod(pass, i, withRequests), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				mu.Lock()
				sent++
				if err == nil {
					admitted++
				} else {
					code, reason, _ := describeError(err)
					failures[strings.TrimSpace(fmt.Sprintf("%d %s", code, reason))]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return FloodPass{Sent: sent, Admitted: admitted, Failures: failures, Started: started, Finished: time.Now()}
}

// instantPrometheus is a Prometheus HTTP API on loopback that answers every range query at
// once: five samples for a query of one namespace (under the plugin's threshold, so the
// histories of any namespace are read too), forty for one of any namespace. Once failing,
// it answers 503.
type instantPrometheus struct {
	server  *httptest.Server
	failing atomic.Bool

	mu            sync.Mutex
	queries       int64
	held, maxHeld int
}

// startInstantPrometheus listens on 127.0.0.1 (httptest's loopback listener).
func startInstantPrometheus() *instantPrometheus {
	p := &instantPrometheus{}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *instantPrometheus) url() string { return p.server.URL }

// matrix is an answer of one series of n samples, a minute apart.
func matrix(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `[%d,"%d"]`, 1_700_000_000+60*i, 100+i)
	}
	b.WriteString(`]}]}}`)
	return []byte(b.String())
}

var (
	namespaceAnswer = matrix(5)
	clusterAnswer   = matrix(40)
)

func (p *instantPrometheus) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query_range" {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	p.queries++
	p.held++
	p.maxHeld = max(p.maxHeld, p.held)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}()
	if p.failing.Load() {
		http.Error(w, "the stand-in fails every query now", http.StatusServiceUnavailable)
		return
	}
	answer := clusterAnswer
	if strings.Contains(r.FormValue("query"), `namespace="`) {
		answer = namespaceAnswer
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
}

// fail makes every later query fail.
func (p *instantPrometheus) fail() { p.failing.Store(true) }

// counts returns the queries received and the most held at once.
func (p *instantPrometheus) counts() (queries int64, maxHeld int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queries, p.maxHeld
}

func (p *instantPrometheus) close() error {
	p.server.Close()
	return nil
}

// usageSampler reads the server's RSS every 100 ms and its goroutines and caches every
// 300 ms until stopped, keeping the most of each.
type usageSampler struct {
	cancel context.CancelFunc
	done   chan ServerUsage
}

func newUsageSampler(ctx context.Context, server *apiServer, pid int) *usageSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &usageSampler{cancel: cancel, done: make(chan ServerUsage, 1)}
	go func() {
		var peak ServerUsage
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for tick := 0; ; tick++ {
			if rss, _, err := readRSS(pid); err == nil {
				peak.RSS = max(peak.RSS, rss)
			}
			if tick%3 == 0 {
				if m, err := readMetrics(ctx, server); err == nil {
					peak = maxUsage(peak, ServerUsage{Goroutines: int(m["go_goroutines"]), Caches: cachesOf(m)})
				}
			}
			select {
			case <-ctx.Done():
				s.done <- peak
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

// maxUsage is the most of each of a and b.
func maxUsage(a, b ServerUsage) ServerUsage {
	out := ServerUsage{Goroutines: max(a.Goroutines, b.Goroutines), RSS: max(a.RSS, b.RSS), HWM: max(a.HWM, b.HWM), Caches: map[string]CacheReading{}}
	for _, c := range irFloodCaches {
		x, y := a.Caches[c], b.Caches[c]
		out.Caches[c] = CacheReading{Entries: max(x.Entries, y.Entries), Bytes: max(x.Bytes, y.Bytes), LargestShare: max(x.LargestShare, y.LargestShare)}
	}
	return out
}

// cachesOf reads the flood's caches' gauges from the server's metrics.
func cachesOf(m map[string]float64) map[string]CacheReading {
	out := map[string]CacheReading{}
	for _, c := range irFloodCaches {
		label := fmt.Sprintf(`{cache=%q}`, c)
		out[c] = CacheReading{
			Entries:      m["portcullis_initialresources_cache_entries"+label],
			Bytes:        m["portcullis_initialresources_cache_bytes"+label],
			LargestShare: m["portcullis_initialresources_cache_largest_namespace_share"+label],
		}
	}
	return out
}

// readCaches reads the flood's caches' gauges.
func readCaches(ctx context.Context, server *apiServer) (map[string]CacheReading, error) {
	m, err := readMetrics(ctx, server)
	if err != nil {
		return nil, err
	}
	return cachesOf(m), nil
}

func describeCaches(caches map[string]CacheReading) string {
	var parts []string
	for _, c := range irFloodCaches {
		parts = append(parts, fmt.Sprintf("%s %.0f entries, %s", c, caches[c].Entries, formatMiB(int64(caches[c].Bytes))))
	}
	return strings.Join(parts, "; ")
}

// stop ends the sampling and returns the most read.
func (s *usageSampler) stop() ServerUsage {
	s.cancel()
	return <-s.done
}

// readUsage reads the server's goroutines (go_goroutines) and RSS.
func readUsage(ctx context.Context, server *apiServer, pid int) (ServerUsage, error) {
	m, err := readMetrics(ctx, server)
	if err != nil {
		return ServerUsage{}, err
	}
	g, ok := m["go_goroutines"]
	if !ok {
		return ServerUsage{}, errors.New("the server's /metrics has no go_goroutines")
	}
	rss, hwm, err := readRSS(pid)
	return ServerUsage{Goroutines: int(g), RSS: rss, HWM: hwm, Caches: cachesOf(m)}, err
}

// readMetrics reads the server's /metrics as the admin: each series' value by its name and
// labels as written ("name{label=\"v\"}").
func readMetrics(ctx context.Context, server *apiServer) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := server.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return parseMetrics(body), nil
}

// parseMetrics reads Prometheus's text format: comments skipped, the value after the
// series' last space (no timestamps in a server's own metrics).
func parseMetrics(body []byte) map[string]float64 {
	out := map[string]float64{}
	scanner := bufio.NewScanner(bytes.NewReader(body))
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// readRSS reads VmRSS and VmHWM of pid from /proc, in bytes.
func readRSS(pid int) (rss, hwm uint64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for name, into := range map[string]*uint64{"VmRSS": &rss, "VmHWM": &hwm} {
		v, ok := procValue(string(data), name)
		if !ok {
			return 0, 0, fmt.Errorf("/proc/%d/status has no %s", pid, name)
		}
		kib, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		*into = kib << 10
	}
	return rss, hwm, nil
}

func formatMiB(bytes int64) string {
	return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
}

// formatCounts lists counts by key, sorted: "3× 500 InternalError; 1× 0 transport".
func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%d× %s", m[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func writeIRFloodSection(b *bytes.Buffer, r *Results) {
	b.WriteString("## 6. InitialResources under a flood of distinct images\n\n")
	f := r.IRFlood
	if f == nil {
		b.WriteString("Not run.\n\n")
		return
	}
	o := f.Options
	fmt.Fprintf(b, "Ours alone, with `--enable-admission-plugins=%s` and `make run`'s configuration (the plugin's defaults: both sources, `missWait: 100ms`, a 10 s query timeout) with `cacheEntries: %d` and `cacheBytes: %d`, pointing the plugin at a Prometheus stand-in on 127.0.0.1 that answers every query at once (5 samples in a namespace, under the threshold, so the histories of any namespace are read too: 40 samples). First a control pass: %s dry-run pod creates from %d clients whose containers set their requests, so the plugin looks nothing up; a quiet namespace's pod gets its estimate; then *before* is read, and two passes of at most %s dry-run creates each from %d namespaces (half of them from one greedy namespace, far past its share; the rest from the others in turn), each ending a fifth of the entries after the caches reached the bound it fills, whose containers set none, each with an image string of its own (%s): short references (about 50 bytes) that fill the caches to their entry bound, then long ones (about 240 bytes) that fill them to their byte bound. Then the stand-in fails every query, and the quiet namespace's pod must still get its estimate, from the cache. Goroutines are the server's `go_goroutines`; RSS is `VmRSS` of `/proc/<pid>/status`; the caches are the plugin's gauges (`portcullis_initialresources_cache_entries`, `_cache_bytes`, `_cache_largest_namespace_share`); the peak is the most read during the flood (RSS every 100 ms, the rest every 300 ms).\n\n",
		initialresources.PluginName, o.CacheEntries, o.CacheBytes, thousands(o.Images), o.Clients, thousands(o.Images), o.Namespaces, describeMix(f.Mix))
	if o.Unbounded {
		fmt.Fprintf(b, "**This run is the server built with the tag `portcullis_unbounded_caches`** (`%s`), whose caches keep whatever they are given: its checks must fail.\n\n", UnboundedBinary)
	}
	b.WriteString("| cache | entries after the short pass | bytes after the long pass | most entries | most bytes | most one namespace kept |\n|---|---|---|---|---|---|\n")
	for _, c := range irFloodCaches {
		p := f.Peak.Caches[c]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.3f |\n", c, thousands(int(f.AfterShort[c].Entries)), formatMiB(int64(f.AfterLong[c].Bytes)),
			thousands(int(p.Entries)), formatMiB(int64(p.Bytes)), p.LargestShare)
	}
	fmt.Fprintf(b, "| bound | %s | %s | %s | %s | %.2f |\n\n", thousands(o.CacheEntries), formatMiB(int64(o.CacheBytes)), thousands(o.CacheEntries), formatMiB(int64(o.CacheBytes)), irShare)
	fmt.Fprintf(b, "The quiet namespace's pod got its estimate before the flood: %t; after it, from the cache: %t.\n\n", f.QuietBefore, f.QuietAfter)
	fmt.Fprintf(b, "The ceilings come from the plugin's documented bounds (docs/plugins/initialresources.md, *Bounds* and *Sizing*): goroutines %d of its own (4 caches × 16 lookups started) + %d of its Prometheus client (a read and a write loop per connection, one per query held, two idle) + a margin of %d for the server's own = **%d**, plus %d per client in flight at the peak; RSS %s (4 caches of %s, 32 MiB of samples) twice, as the collector lets the heap reach twice what is live, + 32 MiB = **%s**.\n\n",
		irPluginGoroutines, irClientGoroutines, irGoroutineMargin, IRFloodGoroutineCeiling, irGoroutinesPerRequest, formatMiB(irPluginBytes(o.CacheBytes)), formatMiB(int64(o.CacheBytes)), formatMiB(IRFloodRSSCeiling(o.CacheBytes)))
	b.WriteString("| | goroutines | RSS |\n|---|---|---|\n")
	fmt.Fprintf(b, "| before the flood (after the control pass) | %d | %s |\n", f.Before.Goroutines, formatMiB(int64(f.Before.RSS)))
	fmt.Fprintf(b, "| after the flood | %d | %s |\n", f.After.Goroutines, formatMiB(int64(f.After.RSS)))
	fmt.Fprintf(b, "| growth | %+d | %s |\n", f.GoroutineGrowth(), formatMiB(f.RSSGrowth()))
	fmt.Fprintf(b, "| ceiling | %d | — |\n", IRFloodGoroutineCeiling)
	fmt.Fprintf(b, "| peak during the flood (growth) | %d (%+d) | %s (%s) |\n", f.Peak.Goroutines, f.PeakGoroutineGrowth(), formatMiB(int64(f.Peak.RSS)), formatMiB(f.PeakRSSGrowth()))
	fmt.Fprintf(b, "| ceiling at the peak | %d | %s |\n\n", IRFloodPeakGoroutineCeiling(o.Clients), formatMiB(IRFloodRSSCeiling(o.CacheBytes)))
	b.WriteString("| pass | sent | admitted | failed | time | creates per second |\n|---|---|---|---|---|---|\n")
	for _, p := range []struct {
		name string
		p    FloodPass
	}{{"control (requests set)", f.Control}, {"short references", f.Short}, {"long references", f.Long}} {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.0f |\n", p.name, thousands(p.p.Sent), thousands(p.p.Admitted),
			escapeCell(formatCounts(p.p.Failures)), formatDuration(p.p.Elapsed()), p.p.Rate())
	}
	if u := r.IRFloodUnbounded; u != nil {
		fmt.Fprintf(b, "\nThe same flood on `%s` (built with the tag `portcullis_unbounded_caches`: the caches keep whatever they are given), to show the checks above can fail: after the short pass the history cache held %s entries, after the long pass %s (bounds %s and %s); its checks reported:\n\n",
			UnboundedBinary, thousands(int(u.AfterShort["history"].Entries)), formatMiB(int64(u.AfterLong["history"].Bytes)), thousands(o.CacheEntries), formatMiB(int64(o.CacheBytes)))
		for _, f := range u.failures() {
			fmt.Fprintf(b, "- %s\n", escapeCell(f))
		}
	}
	fmt.Fprintf(b, "\nThe stand-in received %s queries and held at most %d at once (the plugin runs at most %d); over the flood the plugin shed %s lookups (`portcullis_initialresources_lookups_shed_total`), admitted %s pods before their lookup finished (`lookups_unfinished_total`) and counted %s failed lookups (`source_errors_total`). Panics in the logs: %d. The server's peak RSS over its life (`VmHWM`) was %s.\n\n",
		thousands64(f.Queries), f.MaxHeld, IRFloodMaxQueries, thousands64(int64(f.Shed)), thousands64(int64(f.Unfinished)), thousands64(int64(f.SourceErrors)), f.Panics.Count, formatMiB(int64(f.After.HWM)))
}

func describeMix(mix map[string]int) string {
	var parts []string
	for _, k := range imageKinds {
		parts = append(parts, fmt.Sprintf("%s %s", thousands(mix[k]), k))
	}
	return strings.Join(parts, ", ")
}
