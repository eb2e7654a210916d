package controlplane

import (
	"fmt"
	"strings"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// AdmissionConfig is the admission configuration `make run` and the soak pass to
// --admission-control-config-file: every plugin of ours that reads configuration with its
// example, and the Portcullis entry with our webhook dispatch on. A stock kube-apiserver
// starts with it too (rollback); the rollback test holds it to that.
func AdmissionConfig() string {
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
		writeEntry(&b, p.Name, p.ExampleConfig)
	}
	b.WriteString("# The Portcullis entry: settings of ours that are no one plugin's. Here, our dispatch of\n")
	b.WriteString("# the two webhook plugins: circuit breakers, a time budget, the validating early exit\n")
	b.WriteString("# (docs/webhooks.md). A stock kube-apiserver ignores the entry.\n")
	writeEntry(&b, portcullisconfig.EntryName, portcullisconfig.Example())
	return b.String()
}

func writeEntry(b *strings.Builder, name, config string) {
	fmt.Fprintf(b, "- name: %s\n  configuration:\n", name)
	for _, line := range strings.Split(strings.TrimRight(config, "\n"), "\n") {
		fmt.Fprintf(b, "    %s\n", line)
	}
}
