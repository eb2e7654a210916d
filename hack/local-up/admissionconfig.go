package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
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
	b.WriteString("# Portcullis's own dispatch of the two webhook plugins (on by default, as upstream's):\n")
	b.WriteString("# circuit breakers and a time budget (docs/webhooks.md).\n")
	for _, r := range portcullisadmission.Replacements() {
		writeEntry(&b, r.Name, r.ExampleConfig)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func writeEntry(b *strings.Builder, name, config string) {
	fmt.Fprintf(b, "- name: %s\n  configuration:\n", name)
	for _, line := range strings.Split(strings.TrimRight(config, "\n"), "\n") {
		fmt.Fprintf(b, "    %s\n", line)
	}
}
