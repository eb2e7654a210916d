#!/usr/bin/env bash
# Usage: hack/update-go-toolchain.sh goX.Y.Z [MINOR...]
#
# Moves the Go toolchain of the named supported minors (all, by default) to goX.Y.Z: each
# minor's go.mod toolchain line and those of its upstream and etcd modules
# (releases/<minor>/upstream, releases/<minor>/etcd), which build with the minor's toolchain.
# The toolchain is fetched through the module proxy first, so a version it does not serve is
# refused before anything is written. docs/compatibility.md's table ("Go toolchain") says which
# toolchain each minor builds with and why; hack/verify-go-toolchain.sh holds both to upstream's
# .go-version. hack/probe-kube-patches.sh (in .ci/run) fails while a newer patch is served.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

if [[ $# -lt 1 || ! $1 =~ ^go1\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: $0 goX.Y.Z [MINOR...] (got: ${*:-nothing})" >&2
  exit 2
fi
toolchain=$1
shift
minors=("$@")
if ((${#minors[@]} == 0)); then
  mapfile -t minors < <(portcullis::minors; portcullis::preview)
fi
# Every minor named is checked before anything is written.
for minor in "${minors[@]}"; do
  PORTCULLIS_KUBE_MINOR=${minor} portcullis::kube_minor >/dev/null
done
platform=$(go env GOHOSTOS)-$(go env GOHOSTARCH)
if [[ -z $(portcullis::download "golang.org/toolchain@v0.0.1-${toolchain}.${platform}" Zip) ]]; then
  echo "error: the module proxy does not serve ${toolchain} (golang.org/toolchain@v0.0.1-${toolchain}.${platform})" >&2
  exit 1
fi
for minor in "${minors[@]}"; do
  for mod in "$(portcullis::minor_dir "${minor}")/go.mod" "$(portcullis::upstream_module_dir "${minor}")/go.mod" "$(portcullis::etcd_module_dir "${minor}")/go.mod"; do
    GOTOOLCHAIN=${toolchain} GOFLAGS= go mod edit -toolchain="${toolchain}" "${mod}"
  done
  echo "${minor}: ${toolchain}"
done
echo "Then: docs/compatibility.md's table (\"Go toolchain\"), CHANGELOG.md's section, hack/verify-go-toolchain.sh (it refuses another Go minor or an older patch than upstream declares), make test and make test-minors."
