#!/usr/bin/env bash
# Regenerates every generated file with the generators the module graph pins (go.mod's tool
# entries): deepcopy-gen for the staging API module and the internal API packages,
# conversion-gen and defaulter-gen for the main module's versioned API packages, and
# openapi-gen for the OpenAPI definitions (pkg/generated/openapi) and the OpenAPIModelName
# methods of the staging API types.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

export CGO_ENABLED="${CGO_ENABLED:-0}"
export GOFLAGS="${GOFLAGS:--trimpath}"
header=hack/boilerplate.go.txt

mapfile -t deepcopy_pkgs < <(portcullis::api_packages; portcullis::internal_packages)
go tool deepcopy-gen \
  --go-header-file "${header}" \
  --output-file zz_generated.deepcopy.go \
  "${deepcopy_pkgs[@]}"

mapfile -t conversion_pkgs < <(portcullis::conversion_packages)
# Conversions of core types (SELinuxOptions, …) come from upstream's core packages.
go tool conversion-gen \
  --go-header-file "${header}" \
  --output-file zz_generated.conversion.go \
  --extra-peer-dirs k8s.io/kubernetes/pkg/apis/core,k8s.io/kubernetes/pkg/apis/core/v1,k8s.io/api/core/v1 \
  "${conversion_pkgs[@]}"
go tool defaulter-gen \
  --go-header-file "${header}" \
  --output-file zz_generated.defaults.go \
  "${conversion_pkgs[@]}"

mapfile -t openapi_pkgs < <(portcullis::openapi_packages)
mapfile -t readonly_pkgs < <(portcullis::openapi_readonly_packages)
readonly_args=()
for pkg in "${readonly_pkgs[@]}"; do
  readonly_args+=(--readonly-pkg "${pkg}")
done
# The API rule report lists violations (mostly lists without +listType, kept as upstream
# served them); hack/api-rules/violation_exceptions.list is the accepted set, and
# verify-codegen fails when it changes.
mkdir -p hack/api-rules
rm -f pkg/generated/openapi/zz_generated.openapi.go
go tool openapi-gen \
  --go-header-file "${header}" \
  --output-dir pkg/generated/openapi \
  --output-pkg github.com/portcullis-k8s/portcullis/pkg/generated/openapi \
  --output-file zz_generated.openapi.go \
  --output-model-name-file zz_generated.model_name.go \
  --report-filename hack/api-rules/violation_exceptions.list \
  "${readonly_args[@]}" \
  "${readonly_pkgs[@]}" \
  "${openapi_pkgs[@]}"
# Only our definitions stay: the read-only packages' are upstream's, and differ by minor.
go run ./hack/openapi-ours pkg/generated/openapi/zz_generated.openapi.go
