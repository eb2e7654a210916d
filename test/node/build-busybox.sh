#!/usr/bin/env bash
# Usage: test/node/build-busybox.sh KUBERNETES_MODULE_DIR OUT_DIR
#
# Builds the busybox of upstream's busybox e2e image, the shell and tools of make
# conformance's images (test/node TestConformance): the version that image is built from (the
# module's test/images/busybox/BASEIMAGE), from busybox's source release, linked statically,
# with busybox's default configuration as the busybox image's is, into
# OUT_DIR/busybox-<version>/busybox, once per version, linked as OUT_DIR/busybox. The source is the release tarball as
# Debian's archive keeps it (its orig tarball: busybox.net is not reachable here), checked
# against the release's SHA-256. Debian's own busybox is not used: Debian reverts busybox's
# passing on of environment variables whose names are not a shell's (data-1), which the
# ConfigMap and Secret envFrom specs read.
source "$(dirname "${BASH_SOURCE[0]}")/../../hack/lib/init.sh"

if [[ $# -ne 2 ]]; then
  echo "usage: $0 KUBERNETES_MODULE_DIR OUT_DIR" >&2
  exit 2
fi
module=$1
out=$2

# Each release's busybox-<version>.tar.bz2.sha256, as busybox.net publishes it.
declare -A sha256=(
  [1.37.0]=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
)

baseimage=${module}/test/images/busybox/BASEIMAGE
version=$(sed -n 's|^linux/amd64=busybox:\([0-9.]*\)$|\1|p' "${baseimage}")
if [[ -z ${version} ]]; then
  echo "$0: ${baseimage} names no linux/amd64 busybox:<version>" >&2
  exit 1
fi
if [[ -z ${sha256[${version}]:-} ]]; then
  echo "$0: busybox ${version} (${baseimage}) has no SHA-256 here: add busybox.net's busybox-${version}.tar.bz2.sha256 to this script" >&2
  exit 1
fi
dir=${out}/busybox-${version}
if [[ -x ${dir}/busybox ]]; then
  ln -sfn "busybox-${version}/busybox" "${out}/busybox"
  exit 0
fi

for tool in curl bzip2 make cc; do
  if ! command -v "${tool}" >/dev/null; then
    echo "$0: building busybox needs ${tool} (apt-get install curl bzip2 make gcc)" >&2
    exit 1
  fi
done
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
tarball=${work}/busybox-${version}.tar.bz2
curl -fsSL -o "${tarball}" "http://deb.debian.org/debian/pool/main/b/busybox/busybox_${version}.orig.tar.bz2"
echo "${sha256[${version}]}  ${tarball}" | sha256sum -c --quiet -
tar -xjf "${tarball}" -C "${work}"
src=${work}/busybox-${version}
make -C "${src}" -s defconfig >/dev/null
# Static: the images hold no libraries. No tc: its CBQ code needs kernel headers newer
# kernels no longer have (Debian disables it too).
sed -i -e 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' -e 's/^CONFIG_TC=y$/# CONFIG_TC is not set/' "${src}/.config"
grep -qx 'CONFIG_STATIC=y' "${src}/.config"
# Its compiler's warnings shown only when the build fails.
if ! KCONFIG_NOTIMESTAMP=1 make -C "${src}" -s -j"$(nproc)" busybox >"${work}/build.log" 2>&1; then
  cat "${work}/build.log" >&2
  exit 1
fi
mkdir -p "${dir}"
install -m 0755 "${src}/busybox" "${dir}/busybox"
ln -sfn "busybox-${version}/busybox" "${out}/busybox"
echo "built busybox ${version} into ${dir}"
