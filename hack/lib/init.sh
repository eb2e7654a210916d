#!/usr/bin/env bash
# Shared helpers for hack/ scripts. Source it; it sets PORTCULLIS_ROOT and strict mode.
set -o errexit -o nounset -o pipefail

PORTCULLIS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PORTCULLIS_ROOT

# portcullis::gomod_kube_version prints the k8s.io/kubernetes version that go.mod requires.
portcullis::gomod_kube_version() {
  (cd "${PORTCULLIS_ROOT}" && go mod edit -json) |
    sed -n '/"Path": "k8s.io\/kubernetes"/{n;s/^[[:space:]]*"Version": "\(.*\)"$/\1/p;q}'
}

# portcullis::upstream_gomod VERSION prints the path of upstream's go.mod for that release,
# fetched through the module proxy.
portcullis::upstream_gomod() {
  local version=$1
  (cd "${PORTCULLIS_ROOT}" && go mod download -json "k8s.io/kubernetes@${version}") |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p'
}

# portcullis::staging_modules GOMOD prints every module upstream replaces with its own
# staging directory: those are published separately as v0.<minor>.<patch>.
portcullis::staging_modules() {
  sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#\1#p' "$1" | sort -u
}

# portcullis::staging_version v1.X.Y prints v0.X.Y.
portcullis::staging_version() {
  echo "v0.${1#v1.}"
}

# portcullis::api_packages lists the packages of the staging API module that carry
# generated code.
portcullis::api_packages() {
  echo github.com/portcullis-k8s/api/settings/v1alpha1
}
