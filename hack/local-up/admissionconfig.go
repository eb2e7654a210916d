package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
)

// writeAdmissionConfigIfMissing writes the admission configuration `make run` passes to
// --admission-control-config-file (controlplane.AdmissionConfig), with InitialResources
// reading prometheusURL when one is given. An existing file is the operator's and is left as
// it is; given a Prometheus it does not name, that is an error saying what to do.
func writeAdmissionConfigIfMissing(path, prometheusURL string) error {
	existing, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.WriteFile(path, []byte(controlplane.AdmissionConfig(true, prometheusURL)), 0o600)
	case err != nil:
		return err
	case prometheusURL != "" && !strings.Contains(string(existing), "url: "+prometheusURL):
		return fmt.Errorf("PORTCULLIS_PROMETHEUS_URL=%s, but %s, written by an earlier run, does not name it: "+
			"add \"prometheus: {url: %s}\" to the configuration of its %s entry, or delete the file to have it written again",
			prometheusURL, path, prometheusURL, initialresources.PluginName)
	}
	return nil
}
