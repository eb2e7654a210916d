package initialresources

import (
	"fmt"
	"io"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// LoadConfiguration reads the plugin's configuration from the admission config file's
// reader, defaulted and validated (pkg/admission/portcullisconfig). A nil or empty reader
// gives the defaults: the VerticalPodAutoscaler source alone.
func LoadConfiguration(r io.Reader) (*portcullisapi.InitialResourcesConfiguration, error) {
	cfg, err := portcullisconfig.LoadInitialResources(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PluginName, err)
	}
	return cfg, nil
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
