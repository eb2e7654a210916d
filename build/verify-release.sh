#!/usr/bin/env bash
# Checks that the release is reproducible.
#
#   build/verify-release.sh WORKDIR PLATFORM...
#     builds the whole release twice, into WORKDIR/1 and WORKDIR/2, requires the two to be
#     byte-identical, and requires the image index to hold exactly the PLATFORMs (make
#     verify-release: linux/amd64 and linux/arm64; CI names linux/amd64 alone).
#   build/verify-release.sh --package-once WORKDIR PLATFORM...
#     builds the whole release once, into WORKDIR/1, and its binaries a second time, into
#     WORKDIR/2, requires the binaries to be byte-identical, then checks the release as the
#     first form does. CI runs it for the older minors but the oldest, whose whole release it
#     builds twice: every older minor packages through the same paths.
#   build/verify-release.sh --binaries REFERENCE_DIR WORKDIR PLATFORM...
#     builds just the binaries into WORKDIR and requires each to equal REFERENCE_DIR's (what
#     `make test` runs after `make release`; with a warm build cache it costs only a link).
#   build/verify-release.sh --against REFERENCE_DIR WORKDIR PLATFORM...
#     the first form, with REFERENCE_DIR as the first build: a whole release of the same
#     PLATFORMs that build/release.sh made from these very inputs, as REFERENCE_DIR.inputs
#     records (portcullis::release_inputs; make test-release writes it). Builds the release
#     once more, into WORKDIR/2, requires the two to be byte-identical, and checks it. CI runs
#     it after make test, so that the release make test packaged is one of the two, not a
#     third packaging.
#
# Relative paths are the repository root's.
#
# Both builds share Go's build cache, so this proves the link and the packaging reproducible
# and independent of the output directory; the compiler's own determinism is Go's to keep.
# WORKDIR is removed when the check passes and kept for inspection when it fails.
source "$(dirname "${BASH_SOURCE[0]}")/../hack/lib/init.sh"
cd "${PORTCULLIS_ROOT}"
GO=${GO:-go}

# explain_difference FINGERPRINT: says whether the sources changed since FINGERPRINT
# (portcullis::tree_fingerprint) was taken: a change between two builds makes them differ for a
# reason that is not reproducibility's, and is reported as such.
explain_difference() {
  if [[ $(portcullis::tree_fingerprint) != "$1" ]]; then
    echo "the sources changed while the check ran (a commit or an edit in this tree): the builds saw different inputs; rerun it on a quiet tree" >&2
  else
    echo "the sources did not change during the check: this is a reproducibility bug" >&2
  fi
}

# same_binaries REFERENCE_DIR DIR PLATFORM...: fails unless each platform's kube-apiserver in
# DIR is byte-identical to REFERENCE_DIR's.
same_binaries() {
  local reference=$1 dir=$2 platform
  shift 2
  for platform in "$@"; do
    if ! cmp "${reference}/${platform}/kube-apiserver" "${dir}/${platform}/kube-apiserver"; then
      echo "NOT REPRODUCIBLE: ${reference}/${platform}/kube-apiserver and ${dir}/${platform}/kube-apiserver differ (kept for inspection)" >&2
      explain_difference "${fingerprint}"
      exit 1
    fi
    echo "reproducible: ${platform}/kube-apiserver ($(cut -d' ' -f1 <(sha256sum "${dir}/${platform}/kube-apiserver")))"
  done
}

reference=""
against=""
package_once=false
if [[ ${1:-} == --binaries ]]; then
  reference=$2
  shift 2
elif [[ ${1:-} == --against ]]; then
  if [[ $# -lt 4 ]]; then
    echo "usage: $0 --against REFERENCE_DIR WORKDIR PLATFORM..." >&2
    exit 2
  fi
  if [[ ! -d $2 ]]; then
    echo "$2: no such release (make test-release builds it)" >&2
    exit 1
  fi
  against=$(cd "$2" && pwd)
  shift 2
elif [[ ${1:-} == --package-once ]]; then
  package_once=true
  shift
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 [--binaries REFERENCE_DIR | --against REFERENCE_DIR | --package-once] WORKDIR PLATFORM..." >&2
  exit 2
fi
work=$1
shift
if [[ -n ${against} ]]; then
  # WORKDIR is emptied: it must neither hold the reference nor lie inside it.
  work_abs=$(realpath -m "${work}")
  if [[ ${against}/ == "${work_abs}/"* || ${work_abs}/ == "${against}/"* ]]; then
    echo "${work}: the work directory and the reference ${against} overlap; name another" >&2
    exit 2
  fi
fi
rm -rf "${work}"
mkdir -p "${work}"
work=$(cd "${work}" && pwd)

fingerprint=$(portcullis::tree_fingerprint)
if [[ -n ${reference} ]]; then
  build/release.sh --binaries-only "${work}" "$@"
  same_binaries "${reference}" "${work}" "$@"
  rm -rf "${work}"
  exit 0
fi

first=${work}/1
if [[ -n ${against} ]]; then
  if [[ ! -f ${against}.inputs || $(<"${against}.inputs") != "$(portcullis::release_inputs "$@")" ]]; then
    echo "${against} was not built from what a build would use now (${against}.inputs: sources, platforms, SOURCE_DATE_EPOCH, toolchain): build it again (make test-release), or check without it (make verify-release)" >&2
    diff <(cat "${against}.inputs" 2>/dev/null) <(portcullis::release_inputs "$@") >&2
    exit 1
  fi
  first=${against}
else
  build/release.sh "${first}" "$@"
fi
if [[ ${package_once} == true ]]; then
  build/release.sh --binaries-only "${work}/2" "$@"
  same_binaries "${first}" "${work}/2" "$@"
  echo "the release, packaged once:"
else
  build/release.sh "${work}/2" "$@"
  if ! diff -r "${first}" "${work}/2"; then
    echo "NOT REPRODUCIBLE: ${first} and ${work}/2 differ (kept for inspection)" >&2
    explain_difference "${fingerprint}"
    exit 1
  fi
  echo "reproducible: two builds agree on every file:"
fi
cat "${first}/SHA256SUMS"

# The release tests every minor's release runs (hack/compatibility's releaseEveryMinor: the
# index's platforms, what SHA256SUMS lists, the binaries static, trimmed and stamped, the
# SBOM, the licence texts, the image's filesystem, the deploy kit naming this release), run
# by the release test package. An older minor's release is tested nowhere else:
# RELEASE_TEST_RECORD, when set, is the command that records the outcomes (make
# verify-release-minors: testrecord into that minor's records, from which docs/compatibility.md's
# table is written).
log="${work}/release-test.json"
platforms=$(IFS=,; echo "$*")
if ! listed=$("${GO}" run ./hack/compatibility -release-tests) || [[ -z ${listed} ]]; then
  echo "hack/compatibility -release-tests named no release test" >&2
  exit 1
fi
mapfile -t tests <<<"${listed}"
record() {
  if [[ -n ${RELEASE_TEST_RECORD:-} ]]; then
    ${RELEASE_TEST_RECORD}
  else
    cat >/dev/null
  fi
}
# Compiled as make test-release compiles it (the binary's profile, the integration framework
# listed beside it): the test then shares the release's compiled Kubernetes packages, where
# compiling them without it would cost a cold cache another compile of Kubernetes.
if ! PORTCULLIS_RELEASE_DIR="${first}" PORTCULLIS_RELEASE_PLATFORMS=${platforms} "${GO}" test -json -pgo="${PORTCULLIS_ROOT}/cmd/kube-apiserver/default.pgo" \
  -count=1 -run "^($(IFS='|'; echo "${tests[*]}"))\$" ./test/release/ ./test/integration/framework | tee "${log}" | record; then
  grep -h '"Action":"output"' "${log}" | sed -n 's/.*"Output":"\(.*\)"}$/\1/p' | sed 's/\\n$//; s/\\t/\t/g' >&2
  echo "the release tests failed (${log})" >&2
  exit 1
fi
for test in "${tests[@]}"; do
  if ! grep -q "\"Action\":\"pass\",\"Package\":\"github.com/portcullis-k8s/portcullis/test/release\",\"Test\":\"${test}\"," "${log}"; then
    echo "${test} did not pass (${log})" >&2
    exit 1
  fi
done
echo "release tests passed: ${tests[*]}"
echo "the image index holds ${platforms//,/ and }; SHA256SUMS covers the release; the deploy kit names $(portcullis::version)"
rm -rf "${work}"
