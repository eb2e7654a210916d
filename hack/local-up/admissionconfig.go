package main

import (
	"errors"
	"os"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
)

// writeAdmissionConfigIfMissing writes the admission configuration `make run` passes to
// --admission-control-config-file (controlplane.AdmissionConfig). An existing file is the
// operator's and is left as it is.
func writeAdmissionConfigIfMissing(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, []byte(controlplane.AdmissionConfig(true)), 0o600)
}
