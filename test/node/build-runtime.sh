#!/usr/bin/env bash
# test/node/build-runtime.sh DIR builds the real node's container runtime from the Go module
# proxy into DIR/bin: containerd, its runc shim and ctr; runc; crictl; the CNI plugins the
# node's network uses. Each is built by `go install package@version`, with its module's own
# go.mod (its own dependency versions, as its project builds it), once per version: DIR/<module
# path>@<version>/ keeps the build, DIR/bin links to it. The list below is the one list of
# what the node runs and at which version (docs/node.md).
set -o errexit -o nounset -o pipefail
dir=${1:?usage: test/node/build-runtime.sh DIR}
mkdir -p "${dir}/bin"
dir=$(cd "${dir}" && pwd)

# package@version, whether cgo is on, and the build tags (- for none). runc applies the RuntimeDefault seccomp
# profile kubeadm's static pods ask for only when built with cgo and -tags seccomp
# (libseccomp-dev, hack/install-test-deps.sh).
runtime=(
  "github.com/containerd/containerd/v2/cmd/containerd@v2.2.9 0 -"
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v2.2.9 0 -"
  "github.com/containerd/containerd/v2/cmd/ctr@v2.2.9 0 -"
  "github.com/opencontainers/runc@v1.4.2 1 seccomp"
  "sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0 0 -"
  "github.com/containernetworking/plugins/plugins/main/bridge@v1.10.0 0 -"
  "github.com/containernetworking/plugins/plugins/main/loopback@v1.10.0 0 -"
  "github.com/containernetworking/plugins/plugins/ipam/host-local@v1.10.0 0 -"
  "github.com/containernetworking/plugins/plugins/meta/portmap@v1.10.0 0 -"
)

for entry in "${runtime[@]}"; do
  read -r package cgo tags <<<"${entry}"
  name=$(basename "${package%@*}")
  out="${dir}/${package}"
  if [[ ! -x ${out}/${name} ]]; then
    echo "building ${package}"
    rm -rf "${out}.tmp"
    GOBIN="${out}.tmp" GOFLAGS=-trimpath CGO_ENABLED=${cgo} "${GO:-go}" install -tags="${tags#-}" "${package}"
    mv "${out}.tmp" "${out}"
  fi
  ln -sfn "${out}/${name}" "${dir}/bin/${name}"
done
