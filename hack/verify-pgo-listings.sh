#!/usr/bin/env bash
# Fails when a go test -pgo command line of the Makefile compiles most of Kubernetes once more
# for each of its test binaries. With -pgo, every dependency that no non-test package on the
# command line reaches is compiled as a copy for each test binary (go list -test -deps shows it
# as "p [q.test]"): for packages of test files only (the integration suites, test/release,
# test/upgrade) that is thousands of packages each, minutes of a cold CI run, unless the
# integration framework is listed beside them (the Makefile's PGO_SHARED_DEPS). A test binary's
# own copies are a few dozen (testing's, go-cmp's, a test helper's) to a few hundred (the
# release tests' kubeadm libraries, which nothing else of ours links).
#
# Usage: hack/verify-pgo-listings.sh PGO_FLAG LISTING...: each LISTING is one command line's
# packages, as one argument. GO and GOFLAGS are the caller's (the Makefile's).
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

readonly max_copies_per_test_binary=500
if [[ $# -lt 2 || $1 != -pgo=* ]]; then
  echo "usage: $0 -pgo=PROFILE LISTING..." >&2
  exit 2
fi
pgo=$1
shift
go=${GO:-go}
failed=0
for listing in "$@"; do
  # shellcheck disable=SC2086 # a listing is several packages
  if ! deps=$("${go}" list "${pgo}" -test -deps ${listing}); then
    echo "go list -test -deps ${listing} failed" >&2
    failed=1
    continue
  fi
  binaries=$(grep -c '\.test$' <<<"${deps}" || true)
  copies=$(grep -c ' \[.*\.test\]$' <<<"${deps}" || true)
  if ((binaries > 0 && copies > binaries * max_copies_per_test_binary)); then
    echo "go test ${pgo} ${listing}: ${copies} packages compiled as copies for its ${binaries} test binaries (at most ${max_copies_per_test_binary} each): list PGO_SHARED_DEPS beside it (Makefile)" >&2
    failed=1
  fi
done
exit "${failed}"
