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
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
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

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
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
		Help:           "Lookups that had not finished within the miss wait: the pod was admitted without their estimate, which is cached for the next pod. By source.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	registerOnce sync.Once
)

// Plugin is the InitialResources admission plugin.
type Plugin struct {
	*admission.Handler
	sources  []admissionv1alpha1.InitialResourcesSourceName
	missWait time.Duration
	fit      bool

	history *cache[historyKey, historyEstimate] // nil without the Prometheus source
	vpa     *vpaSource                          // nil without the VerticalPodAutoscaler source
	cfg     *admissionv1alpha1.InitialResourcesConfiguration

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

// historyKey is one image, as the pod writes it, in one namespace: the estimate of both
// resources is computed together. (Keyed as written, a hit parses nothing.)
type historyKey struct {
	image     string
	namespace string
}

type historyEstimate map[api.ResourceName]int64

// New returns the plugin for a defaulted, validated configuration. The Prometheus source's
// files (CA, token) are checked here, so a bad one stops the start.
func New(cfg *admissionv1alpha1.InitialResourcesConfiguration) (*Plugin, error) {
	registerOnce.Do(func() { legacyregistry.MustRegister(estimatesSet, sourceErrors, missesAdmitted) })
	p := &Plugin{
		// Pods are created once: 1.10 estimated on CREATE only.
		Handler:  admission.NewHandler(admission.Create),
		sources:  cfg.Sources,
		missWait: cfg.MissWait.Duration,
		fit:      cfg.FitLimitRanges,
		cfg:      cfg,

		requestsSet: map[string]map[api.ResourceName]metrics.CounterMetric{},
	}
	for _, source := range cfg.Sources {
		p.requestsSet[string(source)] = map[api.ResourceName]metrics.CounterMetric{}
		for _, res := range estimatedResources {
			p.requestsSet[string(source)][res] = estimatesSet.WithLabelValues(string(source), string(res))
		}
	}
	if slices.Contains(cfg.Sources, admissionv1alpha1.InitialResourcesSourcePrometheus) {
		prom, err := newPrometheus(cfg.Prometheus)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", PluginName, err)
		}
		// Up to five queries per resource, each within the server's timeout.
		p.setHistory(prom, 10*cfg.Prometheus.Timeout.Duration)
	}
	return p, nil
}

// setHistory makes h the usage history the plugin estimates from, through the cache; one
// computation (both resources, every tier) may take timeout.
func (p *Plugin) setHistory(h usageHistory, timeout time.Duration) {
	cfg := p.cfg
	t := tiers{percentile: *cfg.Percentile, threshold: int(*cfg.SamplesThreshold), short: cfg.ShortWindow.Duration,
		long: cfg.LongWindow.Duration, namespaceOnly: cfg.NamespaceOnly}
	p.history = newCache(cfg.CacheTTL.Duration, timeout, func(ctx context.Context, k historyKey) (historyEstimate, error) {
		out := historyEstimate{}
		img, ok := parseImage(k.image)
		if !ok {
			return out, nil // not an image reference: no history
		}
		for _, res := range estimatedResources {
			v, ok, err := t.estimate(ctx, h, res, img, k.namespace)
			if err != nil {
				return nil, err
			}
			if ok {
				out[res] = v
			}
		}
		return out, nil
	}, func(k historyKey, err error) {
		sourceErrors.WithLabelValues(string(admissionv1alpha1.InitialResourcesSourcePrometheus)).Inc()
		klog.ErrorS(err, "InitialResources: the Prometheus source failed; pods of the image are admitted without its estimate", "image", k.image, "namespace", k.namespace)
	})
}

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
	if !slices.Contains(p.sources, admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler) {
		return
	}
	report := func(err error, keysAndValues ...any) {
		sourceErrors.WithLabelValues(string(admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler)).Inc()
		klog.ErrorS(err, "InitialResources: the VerticalPodAutoscaler source failed; pods are admitted without its estimate", keysAndValues...)
	}
	v := &vpaSource{client: client, recommendation: p.cfg.VerticalPodAutoscaler.Recommendation}
	ttl, timeout := p.cfg.CacheTTL.Duration, 10*time.Second
	v.autoscalers = newCache(ttl, timeout, v.listAutoscalers, func(namespace string, err error) { report(err, "namespace", namespace) })
	v.owners = newCache(ttl, timeout, v.ownerOf, func(owner objectRef, err error) { report(err, "owner", owner.String()) })
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
	if slices.Contains(p.sources, admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler) && p.vpa == nil {
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
	resources  []api.ResourceName
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
	// One deadline for the whole pod, however many containers and sources it asks.
	deadline := time.Now().Add(p.missWait)
	var sets []set
	for _, source := range p.sources {
		switch source {
		case admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler:
			sets = append(sets, p.fromAutoscaler(ctx, deadline, pod, needs)...)
		case admissionv1alpha1.InitialResourcesSourcePrometheus:
			sets = append(sets, p.fromHistory(ctx, deadline, pod, needs)...)
		}
	}
	if len(sets) == 0 {
		return nil
	}
	// Container by container, as 1.10 wrote it; a container's sources in their order.
	slices.SortStableFunc(sets, func(a, b set) int { return a.index - b.index })
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[Annotation] = annotation(sets)
	return nil
}

// needsOf lists, init containers first as 1.10 did, the resources each container sets
// neither request nor limit for.
func needsOf(pod *api.Pod) []*need {
	var out []*need
	index := 0
	add := func(c *api.Container, kind string) {
		var missing []api.ResourceName
		for _, res := range estimatedResources {
			_, request := c.Resources.Requests[res]
			_, limit := c.Resources.Limits[res]
			if !request && !limit {
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

// fromAutoscaler sets what the VPA targeting the pod's owner recommends.
func (p *Plugin) fromAutoscaler(ctx context.Context, deadline time.Time, pod *api.Pod, needs []*need) []set {
	if p.vpa == nil || !hasNeeds(needs) {
		return nil
	}
	vpa, finished := p.vpa.lookup(ctx, deadline, pod)
	if !finished {
		missesAdmitted.WithLabelValues(string(admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler)).Inc()
	}
	if vpa == nil {
		return nil
	}
	var sets []set
	for _, n := range needs {
		rec := vpa.requests[n.container.Name]
		s := p.apply(pod.Namespace, n, string(admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler), func(res api.ResourceName) (resource.Quantity, bool) {
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
func (p *Plugin) fromHistory(ctx context.Context, deadline time.Time, pod *api.Pod, needs []*need) []set {
	if p.history == nil {
		return nil
	}
	var sets []set
	unfinished := false
	for _, n := range needs {
		if len(n.resources) == 0 {
			continue
		}
		est, finished := p.history.get(ctx, historyKey{image: n.container.Image, namespace: pod.Namespace}, deadline)
		unfinished = unfinished || !finished
		s := p.apply(pod.Namespace, n, string(admissionv1alpha1.InitialResourcesSourcePrometheus), func(res api.ResourceName) (resource.Quantity, bool) {
			v, ok := est[res]
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
	if unfinished {
		missesAdmitted.WithLabelValues(string(admissionv1alpha1.InitialResourcesSourcePrometheus)).Inc()
	}
	return sets
}

func hasNeeds(needs []*need) bool {
	return slices.ContainsFunc(needs, func(n *need) bool { return len(n.resources) > 0 })
}

// apply sets the requests estimate gives for n's resources, and takes them off n.
func (p *Plugin) apply(namespace string, n *need, source string, estimate func(api.ResourceName) (resource.Quantity, bool)) set {
	s := set{index: n.index, kind: n.kind, name: n.container.Name}
	var left []api.ResourceName
	for _, res := range n.resources {
		q, ok := estimate(res)
		if ok && p.fit {
			q, ok = p.fitLimitRanges(namespace, res, q)
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
		p.requestsSet[source][res].Inc()
		if v := klog.V(2); v.Enabled() {
			v.InfoS("InitialResources set a request", "resource", res, "quantity", q.String(), "source", source, "container", n.container.Name)
		}
	}
	n.resources = left
	return s
}

// fitLimitRanges keeps q within what the namespace's LimitRanges allow a container.
func (p *Plugin) fitLimitRanges(namespace string, res api.ResourceName, q resource.Quantity) (resource.Quantity, bool) {
	if !p.limitRangesSynced() {
		return q, false
	}
	ranges, err := p.limitRanges.LimitRanges(namespace).List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "InitialResources: listing LimitRanges; the estimate is not set", "namespace", namespace)
		return q, false
	}
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			if lo, ok := item.Min[corev1.ResourceName(res)]; ok && q.Cmp(lo) < 0 {
				q = lo.DeepCopy()
			}
			for _, hi := range []corev1.ResourceList{item.Max, item.Default} {
				if v, ok := hi[corev1.ResourceName(res)]; ok && q.Cmp(v) > 0 {
					q = v.DeepCopy()
				}
			}
		}
	}
	return q, true
}

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
	return "Initial Resources plugin set: " + strings.Join(parts, "; ")
}
