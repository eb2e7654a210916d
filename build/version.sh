#!/usr/bin/env bash
# Prints the -ldflags that stamp the distribution's version into kube-apiserver, the way
# upstream's release builds stamp theirs: k8s.io/component-base/version (what --version and
# GET /version report) and k8s.io/client-go/pkg/version (the loopback client's user agent).
#
# Usage: build/version.sh [VERSION]
#
# gitVersion comes from VERSION (v1.37.2+portcullis.N), or the argument (make node-next-release
# stamps the next release number for the real node's upgrade within one patch), and must agree
# with the Kubernetes version go.mod requires. buildDate honours SOURCE_DATE_EPOCH for
# reproducible builds.
source "$(dirname "${BASH_SOURCE[0]}")/../hack/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

version=${1:-$(portcullis::version)}
origin=${1:+build/version.sh\'s argument}
origin=${origin:-VERSION}
if [[ ! ${version} =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)(-[0-9A-Za-z.]+)?\+portcullis\.[0-9]+$ ]]; then
  echo "error: ${origin}: ${version:-<empty>} is not of the form v1.MINOR.PATCH+portcullis.N" >&2
  exit 1
fi
major=${BASH_REMATCH[1]}
minor=${BASH_REMATCH[2]}
kube_version=$(portcullis::gomod_kube_version)
if [[ ${version%%+*} != "${kube_version}" ]]; then
  echo "error: ${origin}: ${version} is built on ${version%%+*}, but go.mod requires k8s.io/kubernetes ${kube_version}" >&2
  exit 1
fi

commit=$(git rev-parse --verify -q HEAD 2>/dev/null || true)
tree_state=""
if [[ -n ${commit} ]]; then
  if [[ -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    tree_state=clean
  else
    tree_state=dirty
  fi
fi
if [[ -n ${SOURCE_DATE_EPOCH:-} ]]; then
  build_date=$(date -u -d "@${SOURCE_DATE_EPOCH}" +%Y-%m-%dT%H:%M:%SZ)
else
  build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
fi

flags=()
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  flags+=(
    "-X '${pkg}.gitVersion=${version}'"
    "-X '${pkg}.gitMajor=${major}'"
    "-X '${pkg}.gitMinor=${minor}'"
    "-X '${pkg}.gitCommit=${commit}'"
    "-X '${pkg}.gitTreeState=${tree_state}'"
    "-X '${pkg}.buildDate=${build_date}'"
  )
done
echo "${flags[*]}"
