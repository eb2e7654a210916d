#!/usr/bin/env bash
# Downloads every module graph of the repository into the module cache: the newest minor's
# (go.mod), each older minor's (releases/<minor>/go.mod), each minor's upstream binaries' and
# etcd's (releases/<minor>/upstream, releases/<minor>/etcd), and the other modules' (the staging
# API, build/image, build/licenses). .ci/run starts it in the background beside make test's
# first compile, so that a new machine's downloads of the later graphs wait on the network
# while the CPU compiles, not after it. Nothing needs it: every go command downloads what it
# lacks.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"
GO=${GO:-go}

"${GO}" mod download
modules=(staging/src/github.com/portcullis-k8s/api build/image build/licenses)
for minor in $(portcullis::minors); do
  if [[ ${minor} != "$(portcullis::default_minor)" ]]; then
    GOTOOLCHAIN=$(portcullis::toolchain "${minor}") "${GO}" mod download -modfile="${PORTCULLIS_ROOT}/releases/${minor}/go.mod"
  fi
  modules+=("$(portcullis::upstream_module_dir "${minor}")" "$(portcullis::etcd_module_dir "${minor}")")
done
for module in "${modules[@]}"; do
  (cd "${module}" && GOFLAGS= "${GO}" mod download)
done
