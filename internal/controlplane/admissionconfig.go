package controlplane

import (
	"fmt"
	"strings"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
)

// AdmissionConfig is the admission configuration `make run` and the soak pass to
// --admission-control-config-file: every plugin of ours that reads configuration with its
// example, and the Portcullis entry with our webhook dispatch on. With dayOne (make run), the
// plugins that refuse ordinary workloads are in Warn+Audit enforcement mode, as the deploy
// kit has them; the soak, which measures refusals, leaves them denying. prometheusURL, when
// set (make run's PORTCULLIS_PROMETHEUS_URL), is the Prometheus InitialResources reads. A
// stock kube-apiserver starts with any of them (rollback); the rollback test holds them to
// that.
func AdmissionConfig(dayOne bool, prometheusURL string) string {
	var b strings.Builder
	b.WriteString("# Admission configuration (--admission-control-config-file).\n")
	b.WriteString("# Every Portcullis plugin is enabled with --enable-admission-plugins. A plugin that\n")
	b.WriteString("# reads configuration gets an entry under plugins:. Edit, then restart the server.\n")
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\n")
	b.WriteString("kind: AdmissionConfiguration\n")
	b.WriteString("plugins:\n")
	for _, p := range portcullisadmission.Plugins() {
		if p.ExampleConfig == "" {
			fmt.Fprintf(&b, "# %s: takes no configuration.\n", p.Name)
			continue
		}
		config := p.ExampleConfig
		if p.Name == initialresources.PluginName && prometheusURL != "" {
			config += "prometheus:\n  url: " + prometheusURL + "\n"
		}
		writeEntry(&b, p.Name, config)
	}
	b.WriteString("# The Portcullis entry: settings of ours that are no one plugin's. Here, our dispatch of\n")
	b.WriteString("# the two webhook plugins: circuit breakers, a time budget, the validating early exit\n")
	b.WriteString("# (docs/webhooks.md). A stock kube-apiserver ignores the entry.\n")
	example := portcullisconfig.Example()
	if dayOne {
		b.WriteString("# enforcementModes: the plugins that refuse ordinary workloads only warn and audit, as\n")
		b.WriteString("# on a cluster's first day with them (docs/enforcement-modes.md); delete a plugin's\n")
		b.WriteString("# line and restart to let it deny.\n")
		example += DayOneEnforcementModes()
	}
	writeEntry(&b, portcullisconfig.EntryName, example)
	return b.String()
}

// DayOneEnforcementModes is the Portcullis entry's enforcementModes field that puts every
// plugin of ours that refuses ordinary workloads in Warn+Audit.
func DayOneEnforcementModes() string {
	var b strings.Builder
	b.WriteString("enforcementModes:\n")
	for _, p := range portcullisadmission.Plugins() {
		if p.RefusesWorkloads {
			fmt.Fprintf(&b, "- name: %s\n  modes: [%s]\n", p.Name, strings.Join(portcullisadmission.DayOneModes, ", "))
		}
	}
	return b.String()
}

func writeEntry(b *strings.Builder, name, config string) {
	fmt.Fprintf(b, "- name: %s\n  configuration:\n", name)
	for _, line := range strings.Split(strings.TrimRight(config, "\n"), "\n") {
		fmt.Fprintf(b, "    %s\n", line)
	}
}
