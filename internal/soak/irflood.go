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
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
)

// The InitialResources flood: our server with InitialResources alone enabled (the chain's
// stock plugins as they are), reading a Prometheus stand-in on loopback that holds every
// query until the case ends, so every lookup the plugin starts stays started; then dry-run
// pod creates, each with an image string of its own, that the plugin would look up. What the
// server holds must not grow with the images sent: its growth is held to ceilings derived
// from the plugin's documented bounds (docs/plugins/initialresources.md, "Bounds" and
// "Sizing"; defaultLimits in plugin/pkg/admission/initialresources/cache.go, maxSamples in
// its prometheus.go).
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
	// irCacheBytes is what a cache holds as counted; irSampleBytes what one running
	// lookup keeps of samples (524,288 samples of 8 bytes).
	irCacheBytes  = 4 << 20
	irSampleBytes = 4 << 20

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
	// watch and informer work): about the plugin's own bound again. (Measured: the whole
	// growth was 20 to 23, the plugin's 16 started lookups and their connections included.)
	irGoroutineMargin = 64
	// IRFloodGoroutineCeiling bounds the server's goroutine growth from before the flood
	// (after the control pass) to its end: 64 + 12 + 64 = 140. Unbounded, each distinct
	// image held a goroutine and a connection (three goroutines) until Prometheus answered.
	IRFloodGoroutineCeiling = irPluginGoroutines + irClientGoroutines + irGoroutineMargin
	// irGoroutinesPerRequest bounds what one request in flight adds (the HTTP/2 stream's
	// handler, the timeout filter's goroutine, and what the admission chain starts).
	irGoroutinesPerRequest = 8

	// irPluginBytes is what the plugin may hold by its documented bounds: 16 MiB across
	// its four caches and 32 MiB of samples (the Prometheus caches' four running
	// lookups, 4 MiB each; the two others' are not samples and count in their caches).
	irPluginBytes = irCaches*irCacheBytes + 2*IRFloodMaxQueries*irSampleBytes
	// IRFloodRSSCeiling bounds the server's RSS growth over the flood: the plugin's bound
	// twice (Go's collector, at GOGC=100, lets the heap reach twice what is live before it
	// collects), plus 32 MiB for the allocator and the flood's own garbage beyond the
	// control pass's. 128 MiB.
	IRFloodRSSCeiling = 2*irPluginBytes + 32<<20
)

// IRFloodPeakGoroutineCeiling bounds the growth at its peak during the flood, which also
// counts the flood's requests in flight: one per client.
func IRFloodPeakGoroutineCeiling(clients int) int {
	return IRFloodGoroutineCeiling + clients*irGoroutinesPerRequest
}

// irFloodNamespace holds the flood's pods.
const irFloodNamespace = "irflood"

// IRFloodOptions size the InitialResources flood.
type IRFloodOptions struct {
	// Images is how many dry-run pod creates the flood sends, each with an image string of
	// its own; the control pass before it sends as many. 0 skips the case.
	Images int
	// Clients send them, each on its own connection, in a closed loop.
	Clients int
	// Timeout bounds each pass; creates still unsent when it passes are not sent.
	Timeout time.Duration
}

// IRFloodResult is what the flood measured.
type IRFloodResult struct {
	Options IRFloodOptions
	// Mix counts the flood's image strings by kind (imageKinds).
	Mix map[string]int
	// Control is the pass before the flood: the same number of pods, image strings of the
	// same kinds and sizes, but every container sets its requests, so the plugin looks
	// nothing up. It brings the server to the state the request load alone leads to.
	Control, Flood FloodPass
	// Before is read after the control pass, After right after the flood's last answer.
	Before, After ServerUsage
	// Peak is the most read during the flood (RSS every 100 ms, goroutines every 300 ms,
	// and After).
	Peak ServerUsage
	// Queries is how many queries the stand-in received; MaxHeld the most it held at once.
	Queries int64
	MaxHeld int
	// Shed, Unfinished and SourceErrors are the growth of the plugin's counters
	// (portcullis_initialresources_*_total{source="Prometheus"}) over the flood.
	Shed, Unfinished, SourceErrors float64
	Panics                         PanicLines
	Dir                            string
}

// ServerUsage is what the server held at one reading.
type ServerUsage struct {
	Goroutines int
	// RSS is VmRSS from /proc/<pid>/status, in bytes; HWM is VmHWM, the most it ever was.
	RSS, HWM uint64
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
	for _, pass := range []struct {
		name string
		p    FloodPass
	}{{"control pass", r.Control}, {"flood", r.Flood}} {
		if unsent := r.Options.Images - pass.p.Sent; unsent > 0 {
			add("%s: %d creates not sent within %s", pass.name, unsent, r.Options.Timeout)
		}
		if n := pass.p.Sent - pass.p.Admitted; n > 0 {
			add("%s: %d dry-run creates failed (%s); the plugin never refuses a pod", pass.name, n, formatCounts(pass.p.Failures))
		}
	}
	if g := r.GoroutineGrowth(); g > IRFloodGoroutineCeiling {
		add("goroutines grew by %d, over the ceiling of %d", g, IRFloodGoroutineCeiling)
	}
	if g, c := r.PeakGoroutineGrowth(), IRFloodPeakGoroutineCeiling(r.Options.Clients); g > c {
		add("goroutines grew by %d at the flood's peak, over the ceiling of %d", g, c)
	}
	if g := r.PeakRSSGrowth(); g > IRFloodRSSCeiling {
		add("RSS grew by %s at the flood's peak, over the ceiling of %s", formatMiB(g), formatMiB(IRFloodRSSCeiling))
	}
	if r.MaxHeld > IRFloodMaxQueries {
		add("the stand-in held %d queries at once, more than the %d the plugin runs", r.MaxHeld, IRFloodMaxQueries)
	}
	if r.Queries == 0 {
		add("the plugin sent the stand-in no query: the flood measured nothing")
	}
	if r.Shed == 0 {
		add("no lookup was shed: the flood did not reach the plugin's bound on lookups")
	}
	if r.Panics.Count > 0 {
		add("%d panics in the logs, the first: %s", r.Panics.Count, r.Panics.First[0])
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

// runIRFlood starts etcd, the stand-in and our server, then runs the control pass and the
// flood, reading the server's usage around and during the flood.
func (e *environment) runIRFlood(ctx context.Context) (result *IRFloodResult, err error) {
	o := e.opts.IRFlood
	dir := filepath.Join(e.opts.WorkDir, "irflood")
	for _, binary := range []string{e.etcdBinary, e.binaries[Ours]} {
		if _, err := os.Stat(binary); err != nil {
			return nil, fmt.Errorf("the flood needs %s: %w", binary, err)
		}
	}
	result = &IRFloodResult{Options: o, Dir: dir}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
	}()

	prom := startStuckPrometheus()
	stops = append(stops, prom.close)
	config := filepath.Join(dir, "admission-config.yaml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// make run's configuration with PORTCULLIS_PROMETHEUS_URL set: the plugin's defaults
	// (both sources, 100 ms miss wait, 10 s query timeout), the stand-in as its Prometheus.
	if err := os.WriteFile(config, []byte(controlplane.AdmissionConfig(false, prom.url())), 0o600); err != nil {
		return nil, err
	}
	etcd, err := startEtcdMember(ctx, e.etcdBinary, filepath.Join(dir, "etcd"), false)
	if err != nil {
		return nil, err
	}
	stops = append(stops, etcd.stop)
	setup := serverSetup{binary: e.binaries[Ours], kind: Ours, pki: e.pki, etcdURL: etcd.clientURL,
		admissionConfig: config, plugins: []string{initialresources.PluginName}}
	server, err := startAPIServer(ctx, setup, filepath.Join(dir, "apiserver"))
	if err != nil {
		return nil, err
	}
	stops = append(stops, server.stop)
	if err := prepareIRFlood(ctx, server.client); err != nil {
		return nil, err
	}
	clients, err := controlplane.Clients(server.admin, o.Clients)
	if err != nil {
		return nil, err
	}

	pid := server.process.Pid()
	e.progressf("InitialResources flood: control pass, %d dry-run creates (requests set) from %d clients", o.Images, o.Clients)
	control := newUsageSampler(ctx, server, pid)
	result.Control = floodPass(ctx, clients, "control", o.Images, true, o.Timeout)
	control.stop()
	if result.Before, err = readUsage(ctx, server, pid); err != nil {
		return nil, err
	}
	before, err := readMetrics(ctx, server)
	if err != nil {
		return nil, err
	}

	e.progressf("InitialResources flood: %d dry-run creates with distinct images from %d clients, Prometheus stuck", o.Images, o.Clients)
	sampler := newUsageSampler(ctx, server, pid)
	result.Flood = floodPass(ctx, clients, "flood", o.Images, false, o.Timeout)
	peak := sampler.stop()
	if result.After, err = readUsage(ctx, server, pid); err != nil {
		return nil, err
	}
	after, err := readMetrics(ctx, server)
	if err != nil {
		return nil, err
	}
	result.Peak = ServerUsage{Goroutines: max(peak.Goroutines, result.After.Goroutines), RSS: max(peak.RSS, result.After.RSS), HWM: result.After.HWM}
	result.Mix = map[string]int{}
	for i := range o.Images {
		_, kind := floodImage("flood", i)
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
	e.progressf("  InitialResources flood: %d of %d admitted in %s; goroutines %d → %d (peak %d), RSS %s → %s (peak %s); %d queries, at most %d held; %.0f lookups shed",
		result.Flood.Admitted, o.Images, result.Flood.Elapsed().Round(time.Millisecond), result.Before.Goroutines, result.After.Goroutines, result.Peak.Goroutines,
		formatMiB(int64(result.Before.RSS)), formatMiB(int64(result.After.RSS)), formatMiB(int64(result.Peak.RSS)), result.Queries, result.MaxHeld, result.Shed)
	return result, err
}

// prepareIRFlood creates the namespace and its default ServiceAccount (no controller
// manager runs), then waits until a dry-run create of a flood pod is admitted.
func prepareIRFlood(ctx context.Context, client kubernetes.Interface) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: irFloodNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", irFloodNamespace, err)
	}
	if _, err := client.CoreV1().ServiceAccounts(irFloodNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the default ServiceAccount: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		_, err := client.CoreV1().Pods(irFloodNamespace).Create(ctx, floodPod("probe", 0, true), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("a dry-run create in %s is not admitted within %s: %w", irFloodNamespace, readyTimeout, err)
		case <-ticker.C:
		}
	}
}

// The kinds of the flood's image strings, as IRFloodResult.Mix counts them: half the
// flood's images are references the plugin looks up.
const (
	IRFloodImageReference  = "references"
	IRFloodImageLong       = "1,000-byte strings (under the 1,024-byte limit, too long for a reference)"
	IRFloodImageOverLimit  = "1,100-byte strings (over the limit)"
	IRFloodImageUnparsable = "strings that do not parse"
)

// imageKinds lists them in the report's order.
var imageKinds = []string{IRFloodImageReference, IRFloodImageLong, IRFloodImageOverLimit, IRFloodImageUnparsable}

// floodImage is the i-th image string of a pass, distinct from every other pass's and
// index's: half of them references the plugin looks up, an eighth each long strings just
// under and just over its 1,024-byte limit (neither is a reference: a name is at most 255
// characters), a quarter strings that do not parse. None has leading or trailing space,
// the only thing the pod's validation checks of an image.
func floodImage(pass string, i int) (image, kind string) {
	switch i % 8 {
	case 0, 2, 4, 6:
		return fmt.Sprintf("registry.example:5000/%s/app-%06d:v%d", pass, i, i%3), IRFloodImageReference
	case 1:
		return longImage(pass, i, 1000), IRFloodImageLong
	case 5:
		return longImage(pass, i, 1100), IRFloodImageOverLimit
	default:
		return fmt.Sprintf("Not A Reference/%s#%06d", pass, i), IRFloodImageUnparsable
	}
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

// floodPass sends n dry-run creates of the pass's pods from the clients, each in a closed
// loop, within timeout.
func floodPass(ctx context.Context, clients []kubernetes.Interface, pass string, n int, withRequests bool, timeout time.Duration) FloodPass {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		sent     int
		admitted int
		wg       sync.WaitGroup
	)
	failures := map[string]int{}
	started := time.Now()
	for _, client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				_, err := client.CoreV1().Pods(irFloodNamespace).Create(ctx, floodPod(pass, i, withRequests), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
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

// stuckPrometheus is a Prometheus HTTP API on loopback that holds every range query until
// it is closed (or the client gives up), then answers an empty matrix.
type stuckPrometheus struct {
	server  *httptest.Server
	release chan struct{}

	mu               sync.Mutex
	queries          int64
	held, maxHeld    int
	closeReleaseOnce sync.Once
}

// startStuckPrometheus listens on 127.0.0.1 (httptest's loopback listener).
func startStuckPrometheus() *stuckPrometheus {
	p := &stuckPrometheus{release: make(chan struct{})}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *stuckPrometheus) url() string { return p.server.URL }

func (p *stuckPrometheus) serve(w http.ResponseWriter, r *http.Request) {
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
	select {
	case <-p.release:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
}

// counts returns the queries received and the most held at once.
func (p *stuckPrometheus) counts() (queries int64, maxHeld int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queries, p.maxHeld
}

// close answers the held queries and stops the server.
func (p *stuckPrometheus) close() error {
	p.closeReleaseOnce.Do(func() { close(p.release) })
	p.server.Close()
	return nil
}

// usageSampler reads the server's RSS every 100 ms and its goroutines every 300 ms until
// stopped, keeping the most of each.
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
					peak.Goroutines = max(peak.Goroutines, int(m["go_goroutines"]))
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
	return ServerUsage{Goroutines: int(g), RSS: rss, HWM: hwm}, err
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
	fmt.Fprintf(b, "Ours alone, with `--enable-admission-plugins=%s` and `make run`'s configuration (the plugin's defaults: both sources, `missWait: 100ms`, a 10 s query timeout) pointing the plugin at a Prometheus stand-in on 127.0.0.1 that holds every query until the case ends: every lookup the plugin starts stays started, the worst case for what it holds. First a control pass: %s dry-run pod creates from %d clients with image strings of the same kinds and sizes, whose containers set their requests, so the plugin looks nothing up; then *before* is read, and the flood sends %s dry-run creates whose containers set none, each with an image string of its own (%s). Goroutines are the server's `go_goroutines`; RSS is `VmRSS` of `/proc/<pid>/status`; the peak is the most read during the flood (RSS every 100 ms, goroutines every 300 ms).\n\n",
		initialresources.PluginName, thousands(o.Images), o.Clients, thousands(o.Images), describeMix(f.Mix))
	fmt.Fprintf(b, "The ceilings come from the plugin's documented bounds (docs/plugins/initialresources.md, *Bounds* and *Sizing*): goroutines %d of its own (4 caches × 16 lookups started) + %d of its Prometheus client (a read and a write loop per connection, one per query held, two idle) + a margin of %d for the server's own = **%d**, plus %d per client in flight at the peak; RSS %s (16 MiB across the caches, 32 MiB of samples) twice, as the collector lets the heap reach twice what is live, + 32 MiB = **%s**.\n\n",
		irPluginGoroutines, irClientGoroutines, irGoroutineMargin, IRFloodGoroutineCeiling, irGoroutinesPerRequest, formatMiB(irPluginBytes), formatMiB(IRFloodRSSCeiling))
	b.WriteString("| | goroutines | RSS |\n|---|---|---|\n")
	fmt.Fprintf(b, "| before the flood (after the control pass) | %d | %s |\n", f.Before.Goroutines, formatMiB(int64(f.Before.RSS)))
	fmt.Fprintf(b, "| after the flood | %d | %s |\n", f.After.Goroutines, formatMiB(int64(f.After.RSS)))
	fmt.Fprintf(b, "| growth | %+d | %s |\n", f.GoroutineGrowth(), formatMiB(f.RSSGrowth()))
	fmt.Fprintf(b, "| ceiling | %d | — |\n", IRFloodGoroutineCeiling)
	fmt.Fprintf(b, "| peak during the flood (growth) | %d (%+d) | %s (%s) |\n", f.Peak.Goroutines, f.PeakGoroutineGrowth(), formatMiB(int64(f.Peak.RSS)), formatMiB(f.PeakRSSGrowth()))
	fmt.Fprintf(b, "| ceiling at the peak | %d | %s |\n\n", IRFloodPeakGoroutineCeiling(o.Clients), formatMiB(IRFloodRSSCeiling))
	b.WriteString("| pass | sent | admitted | failed | time | creates per second |\n|---|---|---|---|---|---|\n")
	for _, p := range []struct {
		name string
		p    FloodPass
	}{{"control (requests set)", f.Control}, {"flood (distinct images)", f.Flood}} {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.0f |\n", p.name, thousands(p.p.Sent), thousands(p.p.Admitted),
			escapeCell(formatCounts(p.p.Failures)), formatDuration(p.p.Elapsed()), p.p.Rate())
	}
	fmt.Fprintf(b, "\nThe stand-in received %s queries and held at most %d at once (the plugin runs at most %d: each running lookup of the per-namespace cache waits on its first query, so the per-image cache is never reached); over the flood the plugin shed %s lookups (`portcullis_initialresources_lookups_shed_total`), admitted %s pods before their lookup finished (`lookups_unfinished_total`) and counted %s failed lookups (`source_errors_total`, the queries its 10 s timeout gave up on). Panics in the logs: %d. The server's peak RSS over its life (`VmHWM`) was %s.\n\n",
		thousands64(f.Queries), f.MaxHeld, IRFloodMaxQueries, thousands64(int64(f.Shed)), thousands64(int64(f.Unfinished)), thousands64(int64(f.SourceErrors)), f.Panics.Count, formatMiB(int64(f.After.HWM)))
}

func describeMix(mix map[string]int) string {
	var parts []string
	for _, k := range imageKinds {
		parts = append(parts, fmt.Sprintf("%s %s", thousands(mix[k]), k))
	}
	return strings.Join(parts, ", ")
}
