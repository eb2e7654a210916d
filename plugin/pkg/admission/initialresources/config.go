package initialresources

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/internal/configfile"
)

// The defaults: 1.10's percentile, sample threshold and windows; a cache and a miss wait
// that keep pod creation fast; cAdvisor's metric and label names as the kubelet exposes them;
// estimates that fit the LimitRanges (1.10 did not fit them).
const (
	DefaultPercentile         int32 = 90
	DefaultSamplesThreshold   int32 = 30
	DefaultShortWindow              = 7 * 24 * time.Hour
	DefaultLongWindow               = 30 * 24 * time.Hour
	DefaultCacheTTL                 = 10 * time.Minute
	DefaultMissWait                 = 100 * time.Millisecond
	DefaultPrometheusTimeout        = 10 * time.Second
	DefaultPrometheusStep           = 5 * time.Minute
	DefaultMaxPointsPerSeries int32 = 11000
	DefaultCPUMetric                = "container_cpu_usage_seconds_total"
	DefaultCPURateWindow            = 2 * time.Minute
	DefaultMemoryMetric             = "container_memory_working_set_bytes"
	DefaultImageLabel               = "image"
	DefaultNamespaceLabel           = "namespace"
	DefaultContainerLabel           = "container"
	DefaultFitLimitRanges           = true
	DefaultCacheEntries       int32 = 10000
	DefaultCacheBytes               = "4Mi"

	// maxMissWait keeps a miss far from the request timeout: admission is not the place to
	// wait for a monitoring system.
	maxMissWait = 5 * time.Second
	// The caches' sizes: room for a namespace's share of a few entries, up to what a
	// control plane's memory affords four times over.
	minCacheEntries, maxCacheEntries int32 = 16, 1000000
	minCacheBytes, maxCacheBytes     int64 = 64 << 10, 1 << 30
	// maxPointsPerSeries is Prometheus's own limit on a range query's points per series.
	maxPointsPerSeries int32 = 11000
)

var (
	scheme = runtime.NewScheme()
	// Strict: a misspelt field in the admission config file is an error naming it, not a
	// silently ignored setting.
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)

	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

func init() {
	utilruntime.Must(admissionv1alpha1.AddToScheme(scheme))
}

// LoadConfiguration reads the plugin's configuration from the admission config file's
// reader, defaulted and validated. A nil or empty reader gives the defaults: the
// VerticalPodAutoscaler source alone.
func LoadConfiguration(r io.Reader) (*admissionv1alpha1.InitialResourcesConfiguration, error) {
	return configfile.Load(PluginName, r, codecs.UniversalDeserializer(), &admissionv1alpha1.InitialResourcesConfiguration{},
		admissionv1alpha1.SchemeGroupVersion.WithKind("InitialResourcesConfiguration"), SetDefaults, Validate)
}

// SetDefaults fills what the configuration leaves out.
func SetDefaults(cfg *admissionv1alpha1.InitialResourcesConfiguration) {
	if cfg.Sources == nil {
		cfg.Sources = []admissionv1alpha1.InitialResourcesSourceName{admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler}
		if cfg.Prometheus != nil {
			cfg.Sources = append(cfg.Sources, admissionv1alpha1.InitialResourcesSourcePrometheus)
		}
	}
	defaultInt32(&cfg.Percentile, DefaultPercentile)
	defaultInt32(&cfg.SamplesThreshold, DefaultSamplesThreshold)
	defaultDuration(&cfg.ShortWindow, DefaultShortWindow)
	defaultDuration(&cfg.LongWindow, DefaultLongWindow)
	defaultDuration(&cfg.CacheTTL, DefaultCacheTTL)
	defaultDuration(&cfg.MissWait, DefaultMissWait)
	defaultInt32(&cfg.CacheEntries, DefaultCacheEntries)
	if cfg.CacheBytes == nil {
		q := resource.MustParse(DefaultCacheBytes)
		cfg.CacheBytes = &q
	}
	if cfg.FitLimitRanges == nil {
		// A plugin that only estimates never turns an admission into a refusal.
		fit := DefaultFitLimitRanges
		cfg.FitLimitRanges = &fit
	}
	if p := cfg.Prometheus; p != nil {
		defaultDuration(&p.Timeout, DefaultPrometheusTimeout)
		defaultDuration(&p.Step, DefaultPrometheusStep)
		defaultInt32(&p.MaxPointsPerSeries, DefaultMaxPointsPerSeries)
		defaultString(&p.CPUMetric, DefaultCPUMetric)
		defaultDuration(&p.CPURateWindow, DefaultCPURateWindow)
		defaultString(&p.MemoryMetric, DefaultMemoryMetric)
		defaultString(&p.ImageLabel, DefaultImageLabel)
		defaultString(&p.NamespaceLabel, DefaultNamespaceLabel)
		defaultString(&p.ContainerLabel, DefaultContainerLabel)
	}
	if cfg.VerticalPodAutoscaler == nil {
		cfg.VerticalPodAutoscaler = &admissionv1alpha1.InitialResourcesVerticalPodAutoscaler{}
	}
	if cfg.VerticalPodAutoscaler.Recommendation == "" {
		cfg.VerticalPodAutoscaler.Recommendation = admissionv1alpha1.InitialResourcesRecommendationTarget
	}
}

func defaultInt32(v **int32, d int32) {
	if *v == nil {
		*v = &d
	}
}

func defaultDuration(v **metav1.Duration, d time.Duration) {
	if *v == nil {
		*v = &metav1.Duration{Duration: d}
	}
}

func defaultString(v *string, d string) {
	if *v == "" {
		*v = d
	}
}

// Validate checks a defaulted configuration; each error names its field.
func Validate(cfg *admissionv1alpha1.InitialResourcesConfiguration) field.ErrorList {
	var errs field.ErrorList
	known := []string{string(admissionv1alpha1.InitialResourcesSourcePrometheus), string(admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler)}
	seen := sets.New[admissionv1alpha1.InitialResourcesSourceName]()
	sourcesPath := field.NewPath("sources")
	if len(cfg.Sources) == 0 {
		errs = append(errs, field.Required(sourcesPath, "at least one source, or leave it out for the default"))
	}
	for i, s := range cfg.Sources {
		switch {
		case !sets.New(known...).Has(string(s)):
			errs = append(errs, field.NotSupported(sourcesPath.Index(i), s, known))
		case seen.Has(s):
			errs = append(errs, field.Duplicate(sourcesPath.Index(i), s))
		case s == admissionv1alpha1.InitialResourcesSourcePrometheus && cfg.Prometheus == nil:
			errs = append(errs, field.Required(field.NewPath("prometheus"), "the Prometheus source needs a server"))
		}
		seen.Insert(s)
	}
	if p := *cfg.Percentile; p < 1 || p > 100 {
		errs = append(errs, field.Invalid(field.NewPath("percentile"), p, "must be between 1 and 100"))
	}
	if t := *cfg.SamplesThreshold; t < 1 {
		errs = append(errs, field.Invalid(field.NewPath("samplesThreshold"), t, "must be at least 1"))
	}
	errs = append(errs, positive(field.NewPath("shortWindow"), cfg.ShortWindow)...)
	errs = append(errs, positive(field.NewPath("longWindow"), cfg.LongWindow)...)
	if cfg.LongWindow.Duration < cfg.ShortWindow.Duration {
		errs = append(errs, field.Invalid(field.NewPath("longWindow"), cfg.LongWindow.Duration.String(), "must be at least shortWindow"))
	}
	errs = append(errs, positive(field.NewPath("cacheTTL"), cfg.CacheTTL)...)
	if w := cfg.MissWait.Duration; w < 0 || w > maxMissWait {
		errs = append(errs, field.Invalid(field.NewPath("missWait"), w.String(), fmt.Sprintf("must be between 0s and %s", maxMissWait)))
	}
	if n := *cfg.CacheEntries; n < minCacheEntries || n > maxCacheEntries {
		errs = append(errs, field.Invalid(field.NewPath("cacheEntries"), n, fmt.Sprintf("must be between %d and %d", minCacheEntries, maxCacheEntries)))
	}
	if b := cfg.CacheBytes.Value(); b < minCacheBytes || b > maxCacheBytes || cfg.CacheBytes.Cmp(*resource.NewQuantity(b, resource.BinarySI)) != 0 {
		errs = append(errs, field.Invalid(field.NewPath("cacheBytes"), cfg.CacheBytes.String(), "must be a whole number of bytes between 64Ki and 1Gi"))
	}
	if p := cfg.Prometheus; p != nil {
		errs = append(errs, validatePrometheus(p, cfg.ShortWindow.Duration, field.NewPath("prometheus"))...)
	}
	switch r := cfg.VerticalPodAutoscaler.Recommendation; r {
	case admissionv1alpha1.InitialResourcesRecommendationTarget, admissionv1alpha1.InitialResourcesRecommendationUncappedTarget:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("verticalPodAutoscaler", "recommendation"), r,
			[]string{string(admissionv1alpha1.InitialResourcesRecommendationTarget), string(admissionv1alpha1.InitialResourcesRecommendationUncappedTarget)}))
	}
	return errs
}

func validatePrometheus(p *admissionv1alpha1.InitialResourcesPrometheus, shortWindow time.Duration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u, err := url.Parse(p.URL); p.URL == "" {
		errs = append(errs, field.Required(path.Child("url"), "the server's http or https URL"))
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, field.Invalid(path.Child("url"), p.URL, "must be an http or https URL with a host"))
	}
	for name, file := range map[string]string{"bearerTokenFile": p.BearerTokenFile, "caFile": p.CAFile} {
		if file != "" && !filepath.IsAbs(file) {
			errs = append(errs, field.Invalid(path.Child(name), file, "must be an absolute path"))
		}
	}
	errs = append(errs, positive(path.Child("timeout"), p.Timeout)...)
	errs = append(errs, positive(path.Child("step"), p.Step)...)
	if p.Step.Duration > shortWindow {
		errs = append(errs, field.Invalid(path.Child("step"), p.Step.Duration.String(), "must be at most shortWindow"))
	}
	if m := *p.MaxPointsPerSeries; m < 1 || m > maxPointsPerSeries {
		errs = append(errs, field.Invalid(path.Child("maxPointsPerSeries"), m, fmt.Sprintf("must be between 1 and %d (Prometheus's limit)", maxPointsPerSeries)))
	}
	errs = append(errs, positive(path.Child("cpuRateWindow"), p.CPURateWindow)...)
	for name, v := range map[string]string{"cpuMetric": p.CPUMetric, "memoryMetric": p.MemoryMetric} {
		if !metricName.MatchString(v) {
			errs = append(errs, field.Invalid(path.Child(name), v, "must be a Prometheus metric name"))
		}
	}
	for name, v := range map[string]string{"imageLabel": p.ImageLabel, "namespaceLabel": p.NamespaceLabel, "containerLabel": p.ContainerLabel} {
		if !labelName.MatchString(v) {
			errs = append(errs, field.Invalid(path.Child(name), v, "must be a Prometheus label name"))
		}
	}
	return errs
}

func positive(path *field.Path, d *metav1.Duration) field.ErrorList {
	if d.Duration <= 0 {
		return field.ErrorList{field.Invalid(path, d.Duration.String(), "must be positive")}
	}
	return nil
}

// ExampleConfig is a sample configuration for --admission-control-config-file: the
// VerticalPodAutoscaler source (nothing without the VPA's CRD), every setting at its
// default; a Prometheus is added with a prometheus: entry (see docs/plugins/initialresources.md).
const ExampleConfig = `apiVersion: admission.portcullis.io/v1alpha1
kind: InitialResourcesConfiguration
# sources defaults to [VerticalPodAutoscaler]; with a Prometheus added, to
# [VerticalPodAutoscaler, Prometheus]:
# prometheus:
#   url: http://prometheus.monitoring.svc:9090
percentile: 90
samplesThreshold: 30
shortWindow: 168h
longWindow: 720h
namespaceOnly: false
cacheTTL: 10m
cacheEntries: 10000
cacheBytes: 4Mi
missWait: 100ms
fitLimitRanges: true
verticalPodAutoscaler:
  recommendation: target
`
