#!/usr/bin/env bash
# Regenerates the deepcopy functions of the staging API module with k8s.io/code-generator's
# deepcopy-gen, at the version the module graph pins.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

for pkg in $(portcullis::api_packages); do
  go tool deepcopy-gen \
    --go-header-file hack/boilerplate.go.txt \
    --output-file zz_generated.deepcopy.go \
    "${pkg}"
done
