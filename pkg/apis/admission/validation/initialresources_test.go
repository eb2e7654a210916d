package validation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// validInitialResources is a defaulted configuration with both sources.
func validInitialResources() *admission.InitialResourcesConfiguration {
	return &admission.InitialResourcesConfiguration{
		Sources:          []admission.InitialResourcesSourceName{admission.InitialResourcesSourceVerticalPodAutoscaler, admission.InitialResourcesSourcePrometheus},
		Percentile:       ptr.To[int32](90),
		SamplesThreshold: ptr.To[int32](30),
		ShortWindow:      &metav1.Duration{Duration: 7 * 24 * time.Hour},
		LongWindow:       &metav1.Duration{Duration: 30 * 24 * time.Hour},
		CacheTTL:         &metav1.Duration{Duration: 10 * time.Minute},
		CacheEntries:     ptr.To[int32](10000),
		CacheBytes:       ptr.To(resource.MustParse("4Mi")),
		MissWait:         &metav1.Duration{Duration: 100 * time.Millisecond},
		FitLimitRanges:   ptr.To(true),
		Prometheus: &admission.InitialResourcesPrometheus{
			URL:                "http://prometheus:9090",
			Timeout:            &metav1.Duration{Duration: 10 * time.Second},
			Step:               &metav1.Duration{Duration: 5 * time.Minute},
			MaxPointsPerSeries: ptr.To[int32](11000),
			CPUMetric:          "container_cpu_usage_seconds_total",
			CPURateWindow:      &metav1.Duration{Duration: 2 * time.Minute},
			MemoryMetric:       "container_memory_working_set_bytes",
			ImageLabel:         "image",
			NamespaceLabel:     "namespace",
			ContainerLabel:     "container",
		},
		VerticalPodAutoscaler: &admission.InitialResourcesVerticalPodAutoscaler{Recommendation: admission.InitialResourcesRecommendationTarget},
	}
}

// fieldErrors are errs reduced to what the tests compare: each error's type and field.
func fieldErrors(errs field.ErrorList) []string {
	var out []string
	for _, err := range errs {
		out = append(out, string(err.Type)+" "+err.Field)
	}
	return out
}

func TestValidateInitialResourcesConfiguration(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admission.InitialResourcesConfiguration)
		want   []string // type and field of each error
	}{
		{name: "valid", mutate: func(*admission.InitialResourcesConfiguration) {}},
		{name: "the VPA alone, no server", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Sources, c.Prometheus = []admission.InitialResourcesSourceName{admission.InitialResourcesSourceVerticalPodAutoscaler}, nil
		}},
		{name: "the extremes", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Percentile, c.SamplesThreshold = ptr.To[int32](100), ptr.To[int32](1)
			c.LongWindow = c.ShortWindow
			c.MissWait = &metav1.Duration{Duration: 5 * time.Second}
			c.CacheEntries, c.CacheBytes = ptr.To[int32](16), ptr.To(resource.MustParse("1Gi"))
			c.Prometheus.Step, c.Prometheus.MaxPointsPerSeries = c.ShortWindow, ptr.To[int32](1)
			c.Prometheus.CAFile, c.Prometheus.BearerTokenFile = "/etc/ca.crt", "/etc/token"
		}},
		{name: "no source", mutate: func(c *admission.InitialResourcesConfiguration) { c.Sources = []admission.InitialResourcesSourceName{} },
			want: []string{"FieldValueRequired sources"}},
		{name: "an unknown source", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Sources = []admission.InitialResourcesSourceName{"Heapster"}
		}, want: []string{"FieldValueNotSupported sources[0]"}},
		{name: "a source twice", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Sources = []admission.InitialResourcesSourceName{admission.InitialResourcesSourceVerticalPodAutoscaler, admission.InitialResourcesSourceVerticalPodAutoscaler}
		}, want: []string{"FieldValueDuplicate sources[1]"}},
		{name: "Prometheus without a server", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus = nil },
			want: []string{"FieldValueRequired prometheus"}},
		{name: "percentile 0", mutate: func(c *admission.InitialResourcesConfiguration) { c.Percentile = ptr.To[int32](0) },
			want: []string{"FieldValueInvalid percentile"}},
		{name: "percentile 101", mutate: func(c *admission.InitialResourcesConfiguration) { c.Percentile = ptr.To[int32](101) },
			want: []string{"FieldValueInvalid percentile"}},
		{name: "threshold 0", mutate: func(c *admission.InitialResourcesConfiguration) { c.SamplesThreshold = ptr.To[int32](0) },
			want: []string{"FieldValueInvalid samplesThreshold"}},
		{name: "a long window shorter than the short one", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.ShortWindow, c.LongWindow = &metav1.Duration{Duration: 48 * time.Hour}, &metav1.Duration{Duration: 24 * time.Hour}
		}, want: []string{"FieldValueInvalid longWindow"}},
		{name: "a negative window", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.ShortWindow = &metav1.Duration{Duration: -time.Hour}
		}, want: []string{"FieldValueInvalid shortWindow", "FieldValueInvalid prometheus.step"}}, // every step is longer
		{name: "a miss wait too long", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.MissWait = &metav1.Duration{Duration: 30 * time.Second}
		}, want: []string{"FieldValueInvalid missWait"}},
		{name: "a negative miss wait", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.MissWait = &metav1.Duration{Duration: -time.Millisecond}
		}, want: []string{"FieldValueInvalid missWait"}},
		{name: "no cache", mutate: func(c *admission.InitialResourcesConfiguration) { c.CacheTTL = &metav1.Duration{} },
			want: []string{"FieldValueInvalid cacheTTL"}},
		{name: "too few cache entries", mutate: func(c *admission.InitialResourcesConfiguration) { c.CacheEntries = ptr.To[int32](15) },
			want: []string{"FieldValueInvalid cacheEntries"}},
		{name: "too many cache entries", mutate: func(c *admission.InitialResourcesConfiguration) { c.CacheEntries = ptr.To[int32](1000001) },
			want: []string{"FieldValueInvalid cacheEntries"}},
		{name: "too small a cache", mutate: func(c *admission.InitialResourcesConfiguration) { c.CacheBytes = ptr.To(resource.MustParse("1Ki")) },
			want: []string{"FieldValueInvalid cacheBytes"}},
		{name: "too large a cache", mutate: func(c *admission.InitialResourcesConfiguration) { c.CacheBytes = ptr.To(resource.MustParse("2Gi")) },
			want: []string{"FieldValueInvalid cacheBytes"}},
		{name: "a fraction of a byte", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.CacheBytes = ptr.To(resource.MustParse("100000.5"))
		}, want: []string{"FieldValueInvalid cacheBytes"}},
		{name: "no URL", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus.URL = "" },
			want: []string{"FieldValueRequired prometheus.url"}},
		{name: "not an http URL", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus.URL = "prometheus:9090" },
			want: []string{"FieldValueInvalid prometheus.url"}},
		{name: "a URL without a host", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus.URL = "https:///prefix" },
			want: []string{"FieldValueInvalid prometheus.url"}},
		{name: "relative files", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Prometheus.CAFile, c.Prometheus.BearerTokenFile = "ca.crt", "token"
		}, want: []string{"FieldValueInvalid prometheus.bearerTokenFile", "FieldValueInvalid prometheus.caFile"}},
		{name: "no timeout", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus.Timeout = &metav1.Duration{} },
			want: []string{"FieldValueInvalid prometheus.timeout"}},
		{name: "a step longer than the short window", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Prometheus.Step = &metav1.Duration{Duration: 200 * time.Hour}
		}, want: []string{"FieldValueInvalid prometheus.step"}},
		{name: "more points than Prometheus allows", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Prometheus.MaxPointsPerSeries = ptr.To[int32](11001)
		}, want: []string{"FieldValueInvalid prometheus.maxPointsPerSeries"}},
		{name: "no rate window", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus.CPURateWindow = &metav1.Duration{} },
			want: []string{"FieldValueInvalid prometheus.cpuRateWindow"}},
		{name: "metric names with a space and a dash", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Prometheus.CPUMetric, c.Prometheus.MemoryMetric = "cpu seconds", "memory-bytes"
		}, want: []string{"FieldValueInvalid prometheus.cpuMetric", "FieldValueInvalid prometheus.memoryMetric"}},
		{name: "a metric name with a colon", mutate: func(c *admission.InitialResourcesConfiguration) { c.Prometheus.CPUMetric = "job:cpu_seconds:rate" }},
		{name: "label names with a dash, a colon, nothing", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.Prometheus.ImageLabel, c.Prometheus.NamespaceLabel, c.Prometheus.ContainerLabel = "image-name", "name:space", ""
		}, want: []string{"FieldValueInvalid prometheus.imageLabel", "FieldValueInvalid prometheus.namespaceLabel", "FieldValueInvalid prometheus.containerLabel"}},
		{name: "an unknown recommendation", mutate: func(c *admission.InitialResourcesConfiguration) {
			c.VerticalPodAutoscaler.Recommendation = "upperBound"
		}, want: []string{"FieldValueNotSupported verticalPodAutoscaler.recommendation"}},
		{name: "not defaulted", mutate: func(c *admission.InitialResourcesConfiguration) {
			*c = admission.InitialResourcesConfiguration{Sources: c.Sources, Prometheus: &admission.InitialResourcesPrometheus{URL: c.Prometheus.URL}}
		}, want: []string{
			"FieldValueRequired percentile", "FieldValueRequired samplesThreshold", "FieldValueRequired shortWindow", "FieldValueRequired longWindow",
			"FieldValueRequired cacheTTL", "FieldValueRequired missWait", "FieldValueRequired cacheEntries", "FieldValueRequired cacheBytes",
			"FieldValueRequired fitLimitRanges", "FieldValueRequired prometheus.timeout", "FieldValueRequired prometheus.step",
			"FieldValueRequired prometheus.maxPointsPerSeries", "FieldValueRequired prometheus.cpuRateWindow",
			"FieldValueInvalid prometheus.cpuMetric", "FieldValueInvalid prometheus.memoryMetric", "FieldValueInvalid prometheus.imageLabel",
			"FieldValueInvalid prometheus.namespaceLabel", "FieldValueInvalid prometheus.containerLabel",
			"FieldValueRequired verticalPodAutoscaler.recommendation",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validInitialResources()
			tc.mutate(cfg)
			if diff := cmp.Diff(tc.want, fieldErrors(ValidateInitialResourcesConfiguration(cfg, nil))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateInitialResourcesConfigurationPath: the errors name the fields under fldPath.
func TestValidateInitialResourcesConfigurationPath(t *testing.T) {
	cfg := validInitialResources()
	cfg.Percentile = ptr.To[int32](0)
	cfg.Prometheus.URL = ""
	errs := ValidateInitialResourcesConfiguration(cfg, field.NewPath("plugins").Index(3).Child("configuration"))
	want := []string{"FieldValueInvalid plugins[3].configuration.percentile", "FieldValueRequired plugins[3].configuration.prometheus.url"}
	if diff := cmp.Diff(want, fieldErrors(errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
