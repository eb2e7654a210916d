package admission

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InitialResourcesSourceName names a source of usage history for the InitialResources plugin.
type InitialResourcesSourceName string

const (
	// InitialResourcesSourcePrometheus reads cAdvisor's container metrics from a Prometheus
	// server's HTTP API.
	InitialResourcesSourcePrometheus InitialResourcesSourceName = "Prometheus"
	// InitialResourcesSourceVerticalPodAutoscaler reads the recommendation of the
	// VerticalPodAutoscaler (autoscaling.k8s.io/v1) that targets the pod's owner.
	InitialResourcesSourceVerticalPodAutoscaler InitialResourcesSourceName = "VerticalPodAutoscaler"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InitialResourcesConfiguration configures the InitialResources admission plugin, which sets
// the requests of a new pod's containers that set neither request nor limit for a resource,
// from the usage history of containers running the same image.
type InitialResourcesConfiguration struct {
	metav1.TypeMeta

	// Sources are asked in order for each container's estimate; the first with one wins.
	// Defaults to [VerticalPodAutoscaler, Prometheus] when prometheus is set, else
	// [VerticalPodAutoscaler].
	Sources []InitialResourcesSourceName

	// Percentile of the usage samples that becomes the request, 1 to 100. Defaults to 90.
	Percentile *int32

	// SamplesThreshold is how many samples a history needs before a wider one is not
	// tried. Defaults to 30.
	SamplesThreshold *int32

	// ShortWindow is the first history looked at. Defaults to 168h (7 days).
	ShortWindow *metav1.Duration

	// LongWindow is the history looked at when the short one has too few samples. Defaults
	// to 720h (30 days). At least ShortWindow.
	LongWindow *metav1.Duration

	// NamespaceOnly limits the history to the pod's namespace.
	NamespaceOnly bool

	// CacheTTL is how long an estimate is served from the cache; it is refreshed in the
	// background before it expires while pods of the image keep coming. Defaults to 10m.
	CacheTTL *metav1.Duration

	// CacheEntries is the most entries each of the plugin's four caches keeps (usage
	// history per image and namespace, per image for any namespace, the
	// VerticalPodAutoscaler source's autoscalers per namespace and owners); one namespace
	// keeps at most a quarter of them. Defaults to 10000; 16 to 1000000.
	CacheEntries *int32

	// CacheBytes is the most each cache keeps as counted (an entry's key and value, and 256
	// bytes); one namespace keeps at most a quarter of it. Defaults to 4Mi; 64Ki to 1Gi.
	CacheBytes *resource.Quantity

	// MissWait bounds how long a pod whose image has no cached estimate waits for the
	// sources; past it the pod is admitted unchanged and the estimate cached for the next
	// pod. Defaults to 100ms; at most 5s.
	MissWait *metav1.Duration

	// Prometheus is the Prometheus server the Prometheus source queries.
	Prometheus *InitialResourcesPrometheus

	// VerticalPodAutoscaler configures the VerticalPodAutoscaler source.
	VerticalPodAutoscaler *InitialResourcesVerticalPodAutoscaler

	// FitLimitRanges keeps an estimate within what the namespace's LimitRanges allow a
	// container: at least their min, at most their max and their default limit (which
	// LimitRanger gives a container that sets none), so that an estimate never gets the pod
	// refused. Defaults to true; false is 1.10's behaviour (and this field's default before
	// v1.37.2+portcullis.1), where an estimate above a LimitRange's default limit or below
	// its min gets the pod refused by LimitRanger.
	FitLimitRanges *bool
}

// InitialResourcesPrometheus is a Prometheus server, and the names its container metrics
// have.
type InitialResourcesPrometheus struct {
	// URL of the server, http or https, e.g. http://prometheus.monitoring:9090 or a proxy's
	// path prefix.
	URL string

	// BearerTokenFile is the absolute path of a file whose content is sent as a bearer token.
	BearerTokenFile string

	// CAFile is the absolute path of the PEM bundle that verifies an https server; the
	// system's roots by default.
	CAFile string

	// Timeout bounds one query. Defaults to 10s.
	Timeout *metav1.Duration

	// Step is the resolution of the usage samples: one sample per series per step. Defaults
	// to 5m.
	Step *metav1.Duration

	// MaxPointsPerSeries is the most samples one query asks per series (Prometheus refuses
	// more than 11,000); a longer window is read in several queries. Defaults to 11000.
	MaxPointsPerSeries *int32

	// CPUMetric is the counter of CPU seconds used. Defaults to
	// container_cpu_usage_seconds_total.
	CPUMetric string

	// CPURateWindow is the range of the rate() over the CPU counter. Defaults to 2m.
	CPURateWindow *metav1.Duration

	// MemoryMetric is the gauge of memory bytes used. Defaults to
	// container_memory_working_set_bytes.
	MemoryMetric string

	// ImageLabel, NamespaceLabel and ContainerLabel are the labels of the image, the pod's
	// namespace and the container's name. Default to image, namespace and container.
	ImageLabel     string
	NamespaceLabel string
	ContainerLabel string
}

// InitialResourcesRecommendation names a field of a VerticalPodAutoscaler's container
// recommendation.
type InitialResourcesRecommendation string

const (
	// InitialResourcesRecommendationTarget is the recommendation within the VPA's policy.
	InitialResourcesRecommendationTarget InitialResourcesRecommendation = "target"
	// InitialResourcesRecommendationUncappedTarget ignores the VPA's min and max allowed.
	InitialResourcesRecommendationUncappedTarget InitialResourcesRecommendation = "uncappedTarget"
)

// InitialResourcesVerticalPodAutoscaler configures the VerticalPodAutoscaler source.
type InitialResourcesVerticalPodAutoscaler struct {
	// Recommendation is the field used: target (the default) or uncappedTarget.
	Recommendation InitialResourcesRecommendation
}
