package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// The InitialResources plugin's defaults: 1.10's percentile, sample threshold and windows; a
// cache and a miss wait that keep pod creation fast; cAdvisor's metric and label names as the
// kubelet exposes them; estimates that fit the LimitRanges (1.10 did not fit them).
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
)

// SetDefaults_InitialResourcesConfiguration fills what the configuration leaves out: the
// VerticalPodAutoscaler source, and Prometheus after it when prometheus is set.
func SetDefaults_InitialResourcesConfiguration(cfg *admissionv1alpha1.InitialResourcesConfiguration) {
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
	if cfg.VerticalPodAutoscaler == nil {
		cfg.VerticalPodAutoscaler = &admissionv1alpha1.InitialResourcesVerticalPodAutoscaler{}
	}
}

// SetDefaults_InitialResourcesPrometheus fills a set prometheus's query settings and names.
func SetDefaults_InitialResourcesPrometheus(p *admissionv1alpha1.InitialResourcesPrometheus) {
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

// SetDefaults_InitialResourcesVerticalPodAutoscaler fills the recommendation used.
func SetDefaults_InitialResourcesVerticalPodAutoscaler(v *admissionv1alpha1.InitialResourcesVerticalPodAutoscaler) {
	if v.Recommendation == "" {
		v.Recommendation = admissionv1alpha1.InitialResourcesRecommendationTarget
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
