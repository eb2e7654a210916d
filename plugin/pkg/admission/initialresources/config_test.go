package initialresources

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/v1alpha1"
)

// setDefaults defaults cfg as the loader does: through its versioned form, whose defaults
// they are.
func setDefaults(t testing.TB, cfg *portcullisapi.InitialResourcesConfiguration) {
	t.Helper()
	var external admissionv1alpha1.InitialResourcesConfiguration
	if err := v1alpha1.Convert_admission_InitialResourcesConfiguration_To_v1alpha1_InitialResourcesConfiguration(cfg, &external, nil); err != nil {
		t.Fatal(err)
	}
	v1alpha1.SetObjectDefaults_InitialResourcesConfiguration(&external)
	if err := v1alpha1.Convert_v1alpha1_InitialResourcesConfiguration_To_admission_InitialResourcesConfiguration(&external, cfg, nil); err != nil {
		t.Fatal(err)
	}
}

func TestLoadConfigurationDefaults(t *testing.T) {
	for _, in := range []string{"", "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n"} {
		var cfg *portcullisapi.InitialResourcesConfiguration
		var err error
		if in == "" {
			cfg, err = LoadConfiguration(nil)
		} else {
			cfg, err = LoadConfiguration(strings.NewReader(in))
		}
		if err != nil {
			t.Fatal(err)
		}
		want := &portcullisapi.InitialResourcesConfiguration{
			Sources:          []portcullisapi.InitialResourcesSourceName{portcullisapi.InitialResourcesSourceVerticalPodAutoscaler},
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
			VerticalPodAutoscaler: &portcullisapi.InitialResourcesVerticalPodAutoscaler{Recommendation: portcullisapi.InitialResourcesRecommendationTarget},
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
	if len(withPrometheus.Sources) != 2 || withPrometheus.Prometheus.CPUMetric != "container_cpu_usage_seconds_total" {
		t.Errorf("the example with its prometheus entry: sources %v, prometheus %+v", withPrometheus.Sources, withPrometheus.Prometheus)
	}
}

// TestLoadConfigurationErrors: the loader's errors name the plugin and what went wrong; the
// rules themselves are pkg/apis/admission/validation's, tested there.
func TestLoadConfigurationErrors(t *testing.T) {
	const header = "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n"
	tests := []struct {
		name string
		in   string
		want string // in the error
	}{
		{"a misspelt field", header + "percentil: 90\n", `decoding configuration: strict decoding error: unknown field "percentil"`},
		{"another kind", "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookConfigurationGuardConfiguration\n", "want admission.portcullis.io/v1alpha1, Kind=InitialResourcesConfiguration"},
		{"an unknown source", header + "sources: [Heapster]\n", `invalid configuration: sources[0]: Unsupported value: "Heapster"`},
		{"Prometheus without a server", header + "sources: [Prometheus]\n", "invalid configuration: prometheus: Required value"},
		{"a miss wait too long", header + "missWait: 30s\n", "invalid configuration: missWait: Invalid value"},
		{"not an http URL", header + "prometheus:\n  url: prometheus:9090\n", "invalid configuration: prometheus.url: Invalid value"},
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
	want := []portcullisapi.InitialResourcesSourceName{portcullisapi.InitialResourcesSourceVerticalPodAutoscaler, portcullisapi.InitialResourcesSourcePrometheus}
	if diff := cmp.Diff(want, cfg.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if p := cfg.Prometheus; p.Timeout == nil || p.Step == nil || p.MaxPointsPerSeries == nil || p.ImageLabel != "image" {
		t.Errorf("prometheus not defaulted: %+v", p)
	}
}
