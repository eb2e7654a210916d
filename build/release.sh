#!/usr/bin/env bash
# Builds the release into DIR:
#   DIR/<os>/<arch>/kube-apiserver            static (CGO_ENABLED=0), -trimpath, version-stamped
#   DIR/<os>/<arch>/kube-apiserver.cdx.json   its SBOM: the modules it links, with licences (CycloneDX)
#   DIR/kube-apiserver-<version>.oci.tar      OCI image layout: one image per platform, one index
#   DIR/third-party-licenses.tar              the licence texts of the modules the binary links
#                                             (go-licenses save), which the image carries too
#   DIR/deploy/...                            the deploy kit (build/deploy's files), naming this
#                                             release (its image tag, install path, Kubernetes)
#   DIR/SHA256SUMS                            sha256sum -c format, over all of the above
# With --binaries-only, just the binaries. Every byte follows from the commit and
# SOURCE_DATE_EPOCH (the Makefile sets it to the last commit's time); `make verify-release`
# checks that two builds agree.
#
# usage: build/release.sh [--binaries-only] DIR PLATFORM...   (PLATFORM: linux/amd64, linux/arm64)
source "$(dirname "${BASH_SOURCE[0]}")/../hack/lib/init.sh"
cd "${PORTCULLIS_ROOT}"
if [[ $(portcullis::kube_minor) == "$(portcullis::preview)" ]]; then
  echo "error: Kubernetes $(portcullis::kube_minor) is the preview lane (releases/preview): it is built and tested, never released" >&2
  exit 1
fi
GO=${GO:-go}

binaries_only=false
if [[ ${1:-} == --binaries-only ]]; then
  binaries_only=true
  shift
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 [--binaries-only] DIR PLATFORM..." >&2
  exit 2
fi
dir=$1
shift
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  echo "SOURCE_DATE_EPOCH is not set: run through make, which sets it to the last commit's time" >&2
  exit 1
fi

version=$(portcullis::version)
ldflags=$(build/version.sh)
mkdir -p "${dir}"
dir=$(cd "${dir}" && pwd)
# Outputs of an earlier build (another version, other platforms) must not linger beside these.
rm -rf "${dir}/linux" "${dir}/SHA256SUMS" "${dir}"/kube-apiserver-*.oci.tar "${dir}/third-party-licenses.tar" "${dir}/deploy"

artifacts=()
image_args=()
if [[ ${binaries_only} == false ]]; then
  # The SBOM generator runs on this machine whatever the target platform: built once for the
  # host (go tool would build it for GOOS/GOARCH, the target's, and fail to run it).
  sbom_tool_dir=$(mktemp -d)
  trap 'rm -rf "${sbom_tool_dir}"' EXIT
  sbom_tool="${sbom_tool_dir}/cyclonedx-gomod"
  env -u GOOS -u GOARCH GOFLAGS=-trimpath "${GO}" -C build/image build -o "${sbom_tool}" github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod
  # The licence texts, by go-licenses (pinned in build/licenses/go.mod as a tool, a module of
  # its own: it needs the cobra it was released with): for every module the binary links, its
  # licence file(s), and for a reciprocal licence (MPL) the module's source, as that licence
  # asks of a redistribution. The modules are the same for both platforms: read for
  # linux/amd64. Its warnings (assembly files it does not classify) go to a log, shown if it
  # fails.
  licenses_tool="${sbom_tool_dir}/go-licenses"
  # Without -trimpath: go-licenses tells the standard library by the GOROOT compiled into it,
  # which -trimpath removes (it then takes every package for the standard library's, and
  # saves nothing).
  env -u GOOS -u GOARCH GOFLAGS= "${GO}" -C build/licenses build -o "${licenses_tool}" github.com/google/go-licenses
  third_party="${sbom_tool_dir}/third-party-licenses"
  echo "writing ${dir}/third-party-licenses.tar"
  # An older minor's pins are releases/1.N/go.mod, which neither go-licenses (the go commands
  # it starts outside the module refuse -modfile) nor the SBOM's generator (it resolves the
  # staging module's directory, and the standard library, against the go.mod it finds) can be
  # given: both read a copy of the sources with that go.mod in place, and the minor's build
  # tag. The copy is a local clone at HEAD (the generator versions the main module by its
  # commit) with the tracked files of the working tree over it.
  licenses_src=${PORTCULLIS_ROOT}
  licenses_goflags=${GOFLAGS:-}
  minor_dir=$(portcullis::minor_dir)
  if [[ ${minor_dir} != . ]]; then
    licenses_src=${sbom_tool_dir}/src
    git clone -q --local --no-checkout "${PORTCULLIS_ROOT}" "${licenses_src}"
    git -C "${licenses_src}" checkout -q --detach "$(git rev-parse HEAD)"
    git ls-files -z | tar --null -T - -cf - | tar -xf - -C "${licenses_src}"
    cp "${minor_dir}/go.mod" "${minor_dir}/go.sum" "${licenses_src}/"
    licenses_goflags="-trimpath -tags=kube$(portcullis::kube_minor)"
  fi
  if ! (cd "${licenses_src}" && GOFLAGS=${licenses_goflags} GOOS=linux GOARCH=amd64 "${licenses_tool}" save ./cmd/kube-apiserver --save_path "${third_party}") 2>"${sbom_tool_dir}/go-licenses.log" ||
    [[ ! -d ${third_party} ]]; then
    cat "${sbom_tool_dir}/go-licenses.log" >&2
    echo "go-licenses save wrote no licence texts" >&2
    exit 1
  fi
  # Reproducible: names sorted, one owner, the commit's time, no per-file extended headers.
  tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH}" \
    --mode='a+rX,u+w,go-w' -C "${third_party}" -cf "${dir}/third-party-licenses.tar" .
  artifacts+=("third-party-licenses.tar")
fi
for platform in "$@"; do
  if [[ ! ${platform} =~ ^linux/(amd64|arm64)$ ]]; then
    echo "platform ${platform}: the release builds linux/amd64 and linux/arm64" >&2
    exit 1
  fi
  out="${dir}/${platform}/kube-apiserver"
  echo "building ${out}"
  # The one place release binaries are built: the reproducibility check runs this same command.
  CGO_ENABLED=0 GOOS=${platform%/*} GOARCH=${platform#*/} \
    "${GO}" build -trimpath -buildvcs=false -ldflags "${ldflags}" -o "${out}" ./cmd/kube-apiserver
  artifacts+=("${platform}/kube-apiserver")
  image_args+=(-binary "${platform}=${out}")
  if [[ ${binaries_only} == false ]]; then
    # The SBOM, by CycloneDX's own generator (pinned in build/image/go.mod as a tool): the
    # modules the main package links for this platform, at the versions go.mod selects, with
    # licences detected in the module cache, and the Go standard library at the toolchain's
    # version (-std), so that a Go vulnerability is found by it. No serial number or timestamp, so that it is
    # reproducible like every other artifact.
    echo "writing ${out}.cdx.json"
    GOFLAGS=${licenses_goflags} GOOS=${platform%/*} GOARCH=${platform#*/} "${sbom_tool}" app \
      -json -licenses -std -noserial -notimestamp -main cmd/kube-apiserver -output "${out}.cdx.json" "${licenses_src}"
    artifacts+=("${platform}/kube-apiserver.cdx.json")
  fi
done

if [[ ${binaries_only} == false ]]; then
  # The deploy kit, naming this release.
  portcullis::write_deploy_kit "${version}" "${dir}/deploy"
  kit=$(portcullis::deploy_kit)
  mapfile -t kit_files <<<"${kit}"
  for file in "${kit_files[@]}"; do
    artifacts+=("deploy/${file#build/deploy/}")
  done

  image="kube-apiserver-${version}.oci.tar"
  GOFLAGS=-trimpath "${GO}" -C build/image run . -version "${version}" -source-date-epoch "${SOURCE_DATE_EPOCH}" \
    -revision "$(git rev-parse HEAD)" -license "${PORTCULLIS_ROOT}/LICENSE" -notice "${PORTCULLIS_ROOT}/NOTICE" \
    -third-party-licenses "${third_party}" \
    "${image_args[@]}" -o "${dir}/${image}"
  artifacts+=("${image}")
fi

mapfile -t artifacts < <(printf '%s\n' "${artifacts[@]}" | LC_ALL=C sort)
(cd "${dir}" && sha256sum -- "${artifacts[@]}" >SHA256SUMS)
echo "wrote ${dir}/SHA256SUMS:"
cat "${dir}/SHA256SUMS"
