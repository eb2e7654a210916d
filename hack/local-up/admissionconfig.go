package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
)

// writeAdmissionConfigIfMissing writes the admission configuration `make run` passes to
// --admission-control-config-file: one note per plugin of ours on how it is configured. An
// existing file is the operator's and is left as it is.
func writeAdmissionConfigIfMissing(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var b strings.Builder
	b.WriteString("# Admission configuration for `make run` (--admission-control-config-file).\n")
	b.WriteString("# Every Portcullis plugin is enabled with --enable-admission-plugins. A plugin that\n")
	b.WriteString("# reads configuration gets an entry under plugins:. Edit, then restart `make run`.\n")
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
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func writeEntry(b *strings.Builder, name, config string) {
	fmt.Fprintf(b, "- name: %s\n  configuration:\n", name)
	for _, line := range strings.Split(strings.TrimRight(config, "\n"), "\n") {
		fmt.Fprintf(b, "    %s\n", line)
	}
}
