package initialresources

import (
	"bytes"
	"strings"
	"testing"
)

// Seeds are the tests' inputs; crashers Go finds are kept under testdata/fuzz/<target>.

// FuzzLoadConfiguration loads the plugin's configuration from the admission config file:
// an error names the plugin; a configuration loaded is valid, and a plugin can be built
// from it (which reads no file the configuration does not name).
func FuzzLoadConfiguration(f *testing.F) {
	const header = "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n"
	for _, seed := range []string{
		"",
		ExampleConfig,
		header + "prometheus:\n  url: http://prometheus:9090\n  step: 1h\n  cpuRateWindow: 2h\n",
		header + "sources: [Prometheus, VerticalPodAutoscaler]\nprometheus:\n  url: https://p/prefix\n  maxPointsPerSeries: 5\n",
		header + "percentile: 101\n",
		header + "missWait: 0s\nnamespaceOnly: true\nfitLimitRanges: true\n",
		header + "shortWindow: 1h\nlongWindow: 1m\n",
		header + "verticalPodAutoscaler:\n  recommendation: uncappedTarget\n",
		header + "prometheus:\n  url: http://p\n  imageLabel: \"\"\n  cpuMetric: \"a b\"\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfiguration(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), PluginName+": ") {
				t.Errorf("the error does not name the plugin: %v", err)
			}
			return
		}
		if errs := Validate(cfg); len(errs) > 0 {
			t.Fatalf("loaded, yet invalid: %v", errs.ToAggregate())
		}
		if cfg.Prometheus != nil && (cfg.Prometheus.CAFile != "" || cfg.Prometheus.BearerTokenFile != "") {
			return // the files are read by New
		}
		if _, err := New(cfg); err != nil {
			t.Errorf("New refused a valid configuration: %v", err)
		}
	})
}
