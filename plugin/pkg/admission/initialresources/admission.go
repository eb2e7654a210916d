// Package initialresources is the InitialResources admission plugin, as Kubernetes 1.10 had
// it before its data sources (Heapster's InfluxDB, GCM, Hawkular) went away: a new pod's
// container that sets neither request nor limit for cpu or memory gets a request estimated
// from the usage history of containers running the same image, read here from Prometheus
// (cAdvisor's metrics), or from the recommendation of a VerticalPodAutoscaler targeting the
// pod's owner. Estimates come from a cache refreshed in the background; a pod never waits on
// a source longer than the configured miss wait, and is admitted unchanged when there is no
// estimate.
package initialresources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

const (
	// PluginName is the name of the plugin, as in 1.10.
	PluginName = "InitialResources"
	// Annotation records what the plugin set, in 1.10's words.
	Annotation = "kubernetes.io/initial-resources"
)

// Register registers the plugin with its configuration from the admission config file.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(r io.Reader) (admission.Interface, error) {
		cfg, err := LoadConfiguration(r)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	})
}

var (
	estimatesSet = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "requests_set_total",
		Help:           "Container requests InitialResources set, by source and resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source", "resource"})
	sourceErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "source_errors_total",
		Help:           "Failed lookups of InitialResources's sources (the pod is admitted without their estimate), by source.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	missesAdmitted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "lookups_unfinished_total",
		Help:           "Pods admitted while a lookup was still running (it had not finished within the miss wait): its estimate, once found, is cached for the next pod. By source.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	lookupsShed = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "lookups_shed_total",
		Help:           "Pods admitted without a lookup because as many lookups as the plugin runs were already running or waiting: the next pod of the image tries again. By source.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	cacheEntries = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "cache_entries",
		Help:           "Entries InitialResources's caches keep (at most cacheEntries each), by cache.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cache"})
	cacheBytes = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "cache_bytes",
		Help:           "Bytes InitialResources's caches keep as counted (at most cacheBytes each), by cache.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cache"})
	cacheLargestShare = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "portcullis", Subsystem: "initialresources", Name: "cache_largest_namespace_share",
		Help:           "The most of a cache one namespace keeps: the larger of its fractions of cacheEntries and cacheBytes (at most 0.25), by cache.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"cache"})
	registerOnce sync.Once
)

// The caches, as their gauges' cache label names them.
const (
	historyCache     = "history"
	clusterCache     = "cluster"
	autoscalersCache = "autoscalers"
	ownersCache      = "owners"
)

// gaugesOf returns a cache's series of the gauges.
func gaugesOf(name string) *cacheGauges {
	return &cacheGauges{entries: cacheEntries.WithLabelValues(name), bytes: cacheBytes.WithLabelValues(name),
		largestShare: cacheLargestShare.WithLabelValues(name)}
}

// Plugin is the InitialResources admission plugin.
type Plugin struct {
	*admission.Handler
	sources  []portcullisapi.InitialResourcesSourceName
	missWait time.Duration
	fit      bool

	// limits are each cache's, as configured.
	limits cacheLimits

	history *cache[historyKey, historyEstimate] // nil without the Prometheus source
	// cluster holds the estimates of the histories of any namespace, per image: computed
	// once for every namespace that needs them (nil with namespaceOnly).
	cluster *cache[string, historyEstimate]
	vpa     *vpaSource // nil without the VerticalPodAutoscaler source
	cfg     *portcullisapi.InitialResourcesConfiguration

	limitRanges corev1listers.LimitRangeLister // with fitLimitRanges
	// limitRangesSynced reports the LimitRanges listed. Until then no estimate is set: it
	// could not be kept within them, and a pod is never held waiting for them.
	limitRangesSynced func() bool

	// requestsSet are estimatesSet's counters, by source and resource, resolved once.
	requestsSet map[string]map[api.ResourceName]metrics.CounterMetric
}

var (
	_ admission.MutationInterface                           = &Plugin{}
	_ admission.InitializationValidator                     = &Plugin{}
	_ genericadmissioninit.WantsDynamicClient               = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeInformerFactory = &Plugin{}
)

// historyKey is one image, by its normalized reference (normalizeImage: "nginx" and
// "docker.io/library/nginx:latest" are one key), in one namespace: the estimate of both
// resources is computed together. A string that is not a reference is never cached.
type historyKey struct {
	image     string
	namespace string
}

// maxImageLength bounds the image strings the plugin looks up: a reference's name is at
// most 255 characters, its tag 128 and a sha512 digest 135, so nothing longer is an image a
// runtime could pull. (The pod is validated after admission: the plugin sees what the user
// wrote, up to the request body's limit.)
const maxImageLength = 1024

// historyEstimate is an estimate of each of estimatedResources: millicores, bytes.
type historyEstimate struct {
	value [2]int64
	ok    [2]bool
}

func (e historyEstimate) get(res api.ResourceName) (int64, bool) {
	i := slices.Index(estimatedResources, res)
	if i < 0 {
		return 0, false
	}
	return e.value[i], e.ok[i]
}

func (e *historyEstimate) set(res api.ResourceName, v int64) {
	i := slices.Index(estimatedResources, res)
	e.value[i], e.ok[i] = v, true
}

func historyKeySize(k historyKey, _ historyEstimate) int { return len(k.image) + len(k.namespace) }
func imageKeySize(k string, _ historyEstimate) int       { return len(k) }

// New returns the plugin for a defaulted, validated configuration. The Prometheus source's
// files (CA, token) are checked here, so a bad one stops the start.
func New(cfg *portcullisapi.InitialResourcesConfiguration) (*Plugin, error) {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(estimatesSet, sourceErrors, missesAdmitted, lookupsShed, cacheEntries, cacheBytes, cacheLargestShare)
	})
	p := &Plugin{
		// Pods are created once: 1.10 estimated on CREATE only.
		Handler:  admission.NewHandler(admission.Create),
		sources:  cfg.Sources,
		missWait: cfg.MissWait.Duration,
		fit:      *cfg.FitLimitRanges,
		cfg:      cfg,

		requestsSet: map[string]map[api.ResourceName]metrics.CounterMetric{},
	}
	p.limits = defaultLimits
	p.limits.entries, p.limits.bytes = int(*cfg.CacheEntries), int(cfg.CacheBytes.Value())
	for _, source := range cfg.Sources {
		p.requestsSet[string(source)] = map[api.ResourceName]metrics.CounterMetric{}
		for _, res := range estimatedResources {
			p.requestsSet[string(source)][res] = estimatesSet.WithLabelValues(string(source), string(res))
		}
	}
	if slices.Contains(cfg.Sources, portcullisapi.InitialResourcesSourcePrometheus) {
		prom, err := newPrometheus(cfg.Prometheus)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", PluginName, err)
		}
		p.setHistory(prom, func(window time.Duration) time.Duration {
			// Every range query of a window, each within the server's timeout.
			return time.Duration(chunks(cfg.Prometheus, window)) * cfg.Prometheus.Timeout.Duration
		})
	}
	return p, nil
}

// setHistory makes h the usage history the plugin estimates from, through the caches;
// queryTimeout is the most reading one window may take. A computation's timeout is the sum
// of its windows', for both resources, so that a history read in many chunks is not cut
// short; one of the namespace's tiers also waits for the cluster's.
func (p *Plugin) setHistory(h usageHistory, queryTimeout func(time.Duration) time.Duration) {
	cfg := p.cfg
	t := tiers{percentile: *cfg.Percentile, threshold: int(*cfg.SamplesThreshold), short: cfg.ShortWindow.Duration,
		long: cfg.LongWindow.Duration, namespaceOnly: cfg.NamespaceOnly}
	timeout := func(queries []tierQuery) time.Duration {
		var d time.Duration
		for _, q := range queries {
			d += queryTimeout(q.window)
		}
		return time.Duration(len(estimatedResources)) * d
	}
	source := string(portcullisapi.InitialResourcesSourcePrometheus)
	report := func(image, namespace string, err error) {
		if errors.Is(err, errCounted) || errors.Is(err, errShed) {
			return // the cluster's computation failed and said so, or was shed and counted
		}
		sourceErrors.WithLabelValues(source).Inc()
		klog.ErrorS(err, "InitialResources: the Prometheus source failed; pods of the image are admitted without its estimate", "image", image, "namespace", namespace)
	}
	clusterTimeout := time.Duration(0)
	if !t.namespaceOnly {
		clusterTimeout = timeout(t.clusterTiers())
		p.cluster = newCache(cfg.CacheTTL.Duration, clusterTimeout, p.limits, imageKeySize, func(ctx context.Context, key string) (historyEstimate, error) {
			var out historyEstimate
			img, _ := parseImage(key) // normalized: it parses
			for _, res := range estimatedResources {
				v, ok, _, err := t.first(ctx, h, res, img, t.clusterTiers())
				if err != nil {
					return out, err
				}
				if ok {
					out.set(res, v)
				}
			}
			return out, nil
		}, func(key string, err error) { report(key, "", err) })
		p.cluster.gauges = gaugesOf(clusterCache)
	}
	p.history = newCache(cfg.CacheTTL.Duration, timeout(t.namespaceTiers(""))+clusterTimeout, p.limits, historyKeySize,
		func(ctx context.Context, k historyKey) (historyEstimate, error) {
			var out historyEstimate
			img, _ := parseImage(k.image) // normalized: it parses
			var wider []api.ResourceName  // the resources the namespace has too few samples of
			for _, res := range estimatedResources {
				v, ok, enough, err := t.first(ctx, h, res, img, t.namespaceTiers(k.namespace))
				if err != nil {
					return out, err
				}
				switch {
				case enough || t.namespaceOnly:
					if ok {
						out.set(res, v)
					}
				default:
					wider = append(wider, res)
				}
			}
			if len(wider) == 0 {
				return out, nil
			}
			deadline, _ := ctx.Deadline()
			// Charged to the namespace whose lookup inserted it, though any may use it.
			all, state := p.cluster.get(ctx, k.image, k.namespace, deadline, nil)
			switch state {
			case failed:
				return out, fmt.Errorf("the histories of any namespace: %w", errCounted)
			case shed:
				// The cluster-wide cache has as many lookups under way as it allows: not a
				// failure of the source. Counted as shed; retried once errorTTL has passed.
				lookupsShed.WithLabelValues(source).Inc()
				return out, errShed
			case pending:
				return out, fmt.Errorf("the histories of any namespace were not read in time")
			}
			for _, res := range wider {
				if v, ok := all.get(res); ok {
					out.set(res, v)
				}
			}
			return out, nil
		}, func(k historyKey, err error) { report(k.image, k.namespace, err) })
	p.history.gauges = gaugesOf(historyCache)
}

// errCounted marks an error already logged and counted.
var errCounted = errors.New("failed (logged and counted where it happened)")

// errShed is a namespace's lookup that needed the cluster-wide histories when their cache
// could start no more lookups: not the source's failure.
var errShed = errors.New("the histories of any namespace were shed (too many lookups under way)")

// CheckConfiguration reads a configuration as the plugin's factory does, the files it names
// included: the command runs it before the server starts.
func CheckConfiguration(r io.Reader) error {
	cfg, err := LoadConfiguration(r)
	if err != nil {
		return err
	}
	_, err = New(cfg)
	return err
}

// SetDynamicClient receives the client the VerticalPodAutoscaler source reads with.
func (p *Plugin) SetDynamicClient(client dynamic.Interface) {
	if !slices.Contains(p.sources, portcullisapi.InitialResourcesSourceVerticalPodAutoscaler) {
		return
	}
	report := func(err error, keysAndValues ...any) {
		sourceErrors.WithLabelValues(string(portcullisapi.InitialResourcesSourceVerticalPodAutoscaler)).Inc()
		klog.ErrorS(err, "InitialResources: the VerticalPodAutoscaler source failed; pods are admitted without its estimate", keysAndValues...)
	}
	v := &vpaSource{client: client, recommendation: p.cfg.VerticalPodAutoscaler.Recommendation}
	ttl, timeout := p.cfg.CacheTTL.Duration, 10*time.Second
	v.autoscalers = newCache(ttl, timeout, p.limits, autoscalersSize, v.listAutoscalers, func(namespace string, err error) { report(err, "namespace", namespace) })
	v.owners = newCache(ttl, timeout, p.limits, ownerSize, v.ownerOf, func(owner objectRef, err error) { report(err, "owner", owner.String()) })
	v.autoscalers.gauges, v.owners.gauges = gaugesOf(autoscalersCache), gaugesOf(ownersCache)
	p.vpa = v
}

// SetExternalKubeInformerFactory receives the informers; the LimitRanges are read only with
// fitLimitRanges.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	if !p.fit {
		return
	}
	lr := f.Core().V1().LimitRanges()
	p.limitRanges, p.limitRangesSynced = lr.Lister(), lr.Informer().HasSynced
}

// ValidateInitialization checks the plugin got what its sources need.
func (p *Plugin) ValidateInitialization() error {
	if slices.Contains(p.sources, portcullisapi.InitialResourcesSourceVerticalPodAutoscaler) && p.vpa == nil {
		return fmt.Errorf("%s: missing dynamic client", PluginName)
	}
	if p.fit && p.limitRanges == nil {
		return fmt.Errorf("%s: missing LimitRange lister", PluginName)
	}
	return nil
}

var podsResource = api.Resource("pods")

// need is one container's resources to estimate.
type need struct {
	index     int // the container's place, init containers first
	container *api.Container
	kind      string // "container" or "init container", as 1.10's annotation says
	resources []api.ResourceName
}

// set is what one source set for one container.
type set struct {
	index      int
	kind, name string
	container  *api.Container
	resources  []api.ResourceName
	source     string
	from       string // "" for usage history; the VPA's name otherwise
}

// Admit sets the estimated requests of a new pod's containers.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != podsResource || a.GetSubresource() != "" {
		return nil
	}
	pod, ok := a.GetObject().(*api.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("%s: the object of a pods request is not a Pod", PluginName))
	}
	needs := needsOf(pod)
	if len(needs) == 0 {
		return nil
	}
	var fit *limitWindows
	if p.fit {
		if fit = p.limitWindows(pod.Namespace); fit == nil {
			return nil // the LimitRanges are not known: no estimate could be kept within them
		}
	}
	// One deadline for the whole pod, however many containers and sources it asks.
	deadline := time.Now().Add(p.missWait)
	var sets []set
	for _, source := range p.sources {
		switch source {
		case portcullisapi.InitialResourcesSourceVerticalPodAutoscaler:
			sets = append(sets, p.fromAutoscaler(ctx, deadline, pod, needs, fit)...)
		case portcullisapi.InitialResourcesSourcePrometheus:
			sets = append(sets, p.fromHistory(ctx, deadline, pod, needs, fit)...)
		}
	}
	if fit != nil {
		sets = fit.keepAdmissible(pod, fit.keepPodMax(pod, sets))
	}
	if len(sets) == 0 {
		return nil
	}
	// Container by container, as 1.10 wrote it; a container's sources in their order.
	slices.SortStableFunc(sets, func(a, b set) int { return a.index - b.index })
	for _, s := range sets {
		for _, res := range s.resources {
			p.requestsSet[s.source][res].Inc()
			if v := klog.V(2); v.Enabled() {
				q := s.container.Resources.Requests[res]
				v.InfoS("InitialResources set a request", "resource", res, "quantity", q.String(), "source", s.source, "container", s.name)
			}
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	record := annotation(sets)
	// Run again after a webhook changed the pod, the plugin adds to what its first run set
	// (e.g. a sidecar's requests) instead of forgetting it.
	if rc := a.GetReinvocationContext(); rc != nil && rc.IsReinvoke() {
		if before, ok := strings.CutPrefix(pod.Annotations[Annotation], annotationPrefix); ok && before != "" {
			record = annotationPrefix + before + "; " + strings.TrimPrefix(record, annotationPrefix)
		}
	}
	pod.Annotations[Annotation] = record
	return nil
}

// needsOf lists, init containers first as 1.10 did, the resources each container sets
// neither request nor limit for, and the pod does not set at the pod level: with
// spec.resources (PodLevelResources), the pod's own request or limit of a resource bounds
// its containers' together, and a container's request from history could exceed it.
func needsOf(pod *api.Pod) []*need {
	var out []*need
	index := 0
	podLevel := func(res api.ResourceName) bool {
		if pod.Spec.Resources == nil {
			return false
		}
		_, request := pod.Spec.Resources.Requests[res]
		_, limit := pod.Spec.Resources.Limits[res]
		return request || limit
	}
	add := func(c *api.Container, kind string) {
		var missing []api.ResourceName
		for _, res := range estimatedResources {
			_, request := c.Resources.Requests[res]
			_, limit := c.Resources.Limits[res]
			if !request && !limit && !podLevel(res) {
				missing = append(missing, res)
			}
		}
		if len(missing) > 0 {
			out = append(out, &need{index: index, container: c, kind: kind, resources: missing})
		}
		index++
	}
	for i := range pod.Spec.InitContainers {
		add(&pod.Spec.InitContainers[i], "init container")
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i], "container")
	}
	return out
}

// estimatedResources are the resources 1.10 estimated.
var estimatedResources = []api.ResourceName{api.ResourceCPU, api.ResourceMemory}

// count records how a source's lookup ended for a pod admitted before it finished.
func count(source portcullisapi.InitialResourcesSourceName, state lookup) {
	switch state {
	case pending:
		missesAdmitted.WithLabelValues(string(source)).Inc()
	case shed:
		lookupsShed.WithLabelValues(string(source)).Inc()
	}
}

// fromAutoscaler sets what the VPA targeting the pod's owner recommends.
func (p *Plugin) fromAutoscaler(ctx context.Context, deadline time.Time, pod *api.Pod, needs []*need, fit *limitWindows) []set {
	if p.vpa == nil || !hasNeeds(needs) {
		return nil
	}
	vpa, state := p.vpa.lookup(ctx, deadline, pod)
	count(portcullisapi.InitialResourcesSourceVerticalPodAutoscaler, state)
	if vpa == nil {
		return nil
	}
	var sets []set
	for _, n := range needs {
		if vpa.off(n.container.Name) {
			continue
		}
		rec := vpa.requests[n.container.Name]
		s := apply(n, string(portcullisapi.InitialResourcesSourceVerticalPodAutoscaler), fit, func(res api.ResourceName) (resource.Quantity, bool) {
			q, ok := rec[res]
			return q, ok
		})
		if len(s.resources) > 0 {
			s.from = vpa.name
			sets = append(sets, s)
		}
	}
	return sets
}

// fromHistory sets the usage history's estimates for each container's image.
func (p *Plugin) fromHistory(ctx context.Context, deadline time.Time, pod *api.Pod, needs []*need, fit *limitWindows) []set {
	if p.history == nil {
		return nil
	}
	var sets []set
	worst := found
	for _, n := range needs {
		if len(n.resources) == 0 {
			continue
		}
		key, ok := normalizeImage(n.container.Image)
		if !ok {
			continue // not a reference a runtime could pull: nothing to look up
		}
		est, state := p.history.get(ctx, historyKey{image: key, namespace: pod.Namespace}, pod.Namespace, deadline, nil)
		if state == shed || (state == pending && worst != shed) {
			worst = state
		}
		s := apply(n, string(portcullisapi.InitialResourcesSourcePrometheus), fit, func(res api.ResourceName) (resource.Quantity, bool) {
			v, ok := est.get(res)
			if !ok {
				return resource.Quantity{}, false
			}
			if res == api.ResourceCPU {
				return *resource.NewMilliQuantity(v, resource.DecimalSI), true
			}
			return *resource.NewQuantity(v, resource.DecimalSI), true
		})
		if len(s.resources) > 0 {
			sets = append(sets, s)
		}
	}
	count(portcullisapi.InitialResourcesSourcePrometheus, worst)
	return sets
}

func hasNeeds(needs []*need) bool {
	return slices.ContainsFunc(needs, func(n *need) bool { return len(n.resources) > 0 })
}

// apply sets the requests estimate gives for n's resources, kept within fit's windows
// (when fitting), and takes them off n. An estimate of zero or less is no estimate: a
// zero request says nothing, and would take the place of a namespace's default request.
func apply(n *need, source string, fit *limitWindows, estimate func(api.ResourceName) (resource.Quantity, bool)) set {
	s := set{index: n.index, kind: n.kind, name: n.container.Name, container: n.container, source: source}
	var left []api.ResourceName
	for _, res := range n.resources {
		q, ok := estimate(res)
		ok = ok && q.Sign() > 0
		if ok && fit != nil {
			q, ok = fit.fit(res, q)
		}
		if !ok {
			left = append(left, res)
			continue
		}
		if n.container.Resources.Requests == nil {
			n.container.Resources.Requests = api.ResourceList{}
		}
		n.container.Resources.Requests[res] = q
		s.resources = append(s.resources, res)
	}
	n.resources = left
	return s
}

// limitWindows lists the namespace's LimitRanges for fitting; nil until they are listed
// (or when they cannot be).
func (p *Plugin) limitWindows(namespace string) *limitWindows {
	if !p.limitRangesSynced() {
		return nil
	}
	ranges, err := p.limitRanges.LimitRanges(namespace).List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "InitialResources: listing LimitRanges; no estimate is set", "namespace", namespace)
		return nil
	}
	return newLimitWindows(ranges)
}

const annotationPrefix = "Initial Resources plugin set: "

// annotation is 1.10's record of what was set, naming the VPA a request came from.
func annotation(sets []set) string {
	parts := make([]string, 0, len(sets))
	for _, s := range sets {
		names := make([]string, 0, len(s.resources))
		for _, r := range s.resources {
			names = append(names, string(r))
		}
		slices.Sort(names)
		part := fmt.Sprintf("%s request for %s %s", strings.Join(names, ", "), s.kind, s.name)
		if s.from != "" {
			part += " from VerticalPodAutoscaler " + s.from
		}
		parts = append(parts, part)
	}
	return annotationPrefix + strings.Join(parts, "; ")
}
