package initialresources

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

func TestLoadConfigurationDefaults(t *testing.T) {
	for _, in := range []string{"", "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n"} {
		var cfg *admissionv1alpha1.InitialResourcesConfiguration
		var err error
		if in == "" {
			cfg, err = LoadConfiguration(nil)
		} else {
			cfg, err = LoadConfiguration(strings.NewReader(in))
		}
		if err != nil {
			t.Fatal(err)
		}
		want := &admissionv1alpha1.InitialResourcesConfiguration{
			Sources:          []admissionv1alpha1.InitialResourcesSourceName{admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler},
			Percentile:       ptrTo[int32](90),
			SamplesThreshold: ptrTo[int32](30),
			ShortWindow:      &metav1.Duration{Duration: 7 * 24 * time.Hour},
			LongWindow:       &metav1.Duration{Duration: 30 * 24 * time.Hour},
			CacheTTL:         &metav1.Duration{Duration: 10 * time.Minute},
			CacheEntries:     ptrTo[int32](10000),
			CacheBytes:       ptrTo(resource.MustParse("4Mi")),
			MissWait:         &metav1.Duration{Duration: 100 * time.Millisecond},
			// An estimate never gets a pod refused (1.10: false).
			FitLimitRanges:        ptrTo(true),
			VerticalPodAutoscaler: &admissionv1alpha1.InitialResourcesVerticalPodAutoscaler{Recommendation: admissionv1alpha1.InitialResourcesRecommendationTarget},
		}
		cfg.TypeMeta = metav1.TypeMeta{}
		if diff := cmp.Diff(want, cfg); diff != "" {
			t.Errorf("%q: defaults (-want +got):\n%s", in, diff)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestFitLimitRangesFalseIsKept: 1.10's behaviour stays one line away.
func TestFitLimitRangesFalseIsKept(t *testing.T) {
	cfg, err := LoadConfiguration(strings.NewReader("apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\nfitLimitRanges: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FitLimitRanges == nil || *cfg.FitLimitRanges {
		t.Errorf("fitLimitRanges: false loaded as %v", cfg.FitLimitRanges)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := LoadConfiguration(strings.NewReader(ExampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	defaults, _ := LoadConfiguration(nil)
	cfg.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(defaults, cfg); diff != "" {
		t.Errorf("the example spells out the defaults, but differs (-defaults +example):\n%s", diff)
	}
	uncommented := strings.NewReplacer("# prometheus:", "prometheus:", "#   url:", "  url:").Replace(ExampleConfig)
	withPrometheus, err := LoadConfiguration(strings.NewReader(uncommented))
	if err != nil {
		t.Fatalf("the example with its prometheus entry uncommented: %v", err)
	}
	if len(withPrometheus.Sources) != 2 || withPrometheus.Prometheus.CPUMetric != DefaultCPUMetric {
		t.Errorf("the example with its prometheus entry: sources %v, prometheus %+v", withPrometheus.Sources, withPrometheus.Prometheus)
	}
}

func TestLoadConfigurationErrors(t *testing.T) {
	const header = "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n"
	const prom = "prometheus:\n  url: http://prometheus:9090\n"
	tests := []struct {
		name string
		in   string
		want string // in the error
	}{
		{"a misspelt field", header + "percentil: 90\n", `unknown field "percentil"`},
		{"another kind", "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\n", "want admission.portcullis.io/v1alpha1, Kind=InitialResourcesConfiguration"},
		{"no source", header + "sources: []\n", "sources: Required value"},
		{"an unknown source", header + "sources: [Heapster]\n", `sources[0]: Unsupported value: "Heapster"`},
		{"a source twice", header + "sources: [VerticalPodAutoscaler, VerticalPodAutoscaler]\n", "sources[1]: Duplicate value"},
		{"Prometheus without a server", header + "sources: [Prometheus]\n", "prometheus: Required value"},
		{"percentile 0", header + "percentile: 0\n", "percentile: Invalid value: 0"},
		{"percentile 101", header + "percentile: 101\n", "percentile: Invalid value: 101"},
		{"threshold 0", header + "samplesThreshold: 0\n", "samplesThreshold: Invalid value"},
		{"a long window shorter than the short one", header + "shortWindow: 48h\nlongWindow: 24h\n", "longWindow: Invalid value"},
		{"a negative window", header + "shortWindow: -1h\n", "shortWindow: Invalid value"},
		{"a miss wait too long", header + "missWait: 30s\n", "missWait: Invalid value"},
		{"no cache", header + "cacheTTL: 0s\n", "cacheTTL: Invalid value"},
		{"too few cache entries", header + "cacheEntries: 15\n", "cacheEntries: Invalid value: 15"},
		{"too many cache entries", header + "cacheEntries: 1000001\n", "cacheEntries: Invalid value"},
		{"too small a cache", header + "cacheBytes: 1Ki\n", `cacheBytes: Invalid value: "1Ki"`},
		{"too large a cache", header + "cacheBytes: 2Gi\n", "cacheBytes: Invalid value"},
		{"a fraction of a byte", header + "cacheBytes: 100000.5\n", "cacheBytes: Invalid value"},
		{"no URL", header + "prometheus:\n  timeout: 1s\n", "prometheus.url: Required value"},
		{"not an http URL", header + "prometheus:\n  url: prometheus:9090\n", "prometheus.url: Invalid value"},
		{"a relative CA file", header + prom + "  caFile: ca.crt\n", "prometheus.caFile: Invalid value"},
		{"a relative token file", header + prom + "  bearerTokenFile: token\n", "prometheus.bearerTokenFile: Invalid value"},
		{"a step longer than the short window", header + prom + "  step: 200h\n", "prometheus.step: Invalid value"},
		{"more points than Prometheus allows", header + prom + "  maxPointsPerSeries: 11001\n", "prometheus.maxPointsPerSeries: Invalid value"},
		{"a metric name with a space", header + prom + "  cpuMetric: cpu seconds\n", "prometheus.cpuMetric: Invalid value"},
		{"a label name with a dash", header + prom + "  imageLabel: image-name\n", "prometheus.imageLabel: Invalid value"},
		{"an unknown recommendation", header + "verticalPodAutoscaler:\n  recommendation: upperBound\n", `verticalPodAutoscaler.recommendation: Unsupported value: "upperBound"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfiguration(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), PluginName+": ") {
				t.Errorf("error %v, want one from %s containing %q", err, PluginName, tc.want)
			}
		})
	}
}

// TestPrometheusSourceByDefaultWhenConfigured: a configuration that names a server and no
// sources asks the VPA first, then Prometheus.
func TestPrometheusSourceByDefaultWhenConfigured(t *testing.T) {
	cfg, err := LoadConfiguration(strings.NewReader("apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\nprometheus:\n  url: https://prometheus:9090\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []admissionv1alpha1.InitialResourcesSourceName{admissionv1alpha1.InitialResourcesSourceVerticalPodAutoscaler, admissionv1alpha1.InitialResourcesSourcePrometheus}
	if diff := cmp.Diff(want, cfg.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
}
