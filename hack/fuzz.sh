#!/usr/bin/env bash
# Runs every Go fuzz target of the module's unit-test packages (each func FuzzXxx of a
# _test.go file, as `go test -list` names them), one after the other, each for FUZZTIME.
# A target that fails (a crasher, a failing seed, a build error) does not stop the others;
# the script then exits 1, naming each failed target and the crasher file Go wrote (kept
# under the package's testdata/fuzz/FuzzXxx/: commit it, it becomes a seed).
#
# Environment:
#   FUZZTIME       how long each target fuzzes (go test -fuzztime: 10s, 1m, or 5000x); default 10s
#   FUZZ_PARALLEL  fuzzing workers per target (go test -parallel); default GOMAXPROCS
#   FUZZ_MINIMIZETIME
#                  how long Go may minimize each new input or crasher (go test
#                  -fuzzminimizetime); default 2s, as Go's own 60s would spend a short run
#                  minimizing rather than fuzzing
#   FUZZ_PACKAGES  the packages to search, space-separated; default the unit-test packages
#                  (go list ./... without /test/integration/ and /test/release)
#   FUZZ_WITHOUT   an import path: packages whose tests depend on it are left out, and named.
#                  make test's smoke run leaves out k8s.io/apiserver/pkg/admission: fuzzing
#                  compiles every dependency again, instrumented, and that one brings the API
#                  server's whole stack (minutes on a cold cache); make soak fuzzes them all
#   FUZZ_REPORT    when set, a file this script writes: a header line, then one line per target,
#                  tab-separated:
#                    package  target  execs  time_fuzzed  wall  result
#                  execs and time_fuzzed ("10s", "1m0s") are from Go's last "fuzz: elapsed: …,
#                  execs: N (…/sec)" line (0 and 0s when Go printed none, e.g. a seed failed);
#                  wall ("14s") includes building the instrumented test binary; result is ok or
#                  FAIL. make soak reads it into docs/reliability.md.
#   GO             the go command; default go
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
report=${FUZZ_REPORT:-}
if [[ -n ${report} && ${report} != /* ]]; then
  report=${PWD}/${report}
fi
cd "${PORTCULLIS_ROOT}"

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZ_MINIMIZETIME=${FUZZ_MINIMIZETIME:-2s}
# The build configuration of everything else (the Makefile exports the same), so the build
# cache is shared.
export CGO_ENABLED=${CGO_ENABLED:-0}
if [[ " ${GOFLAGS:-} " != *" -trimpath "* ]]; then
  export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-trimpath"
fi

if [[ -n ${FUZZ_PACKAGES:-} ]]; then
  read -r -a packages <<<"${FUZZ_PACKAGES}"
else
  mapfile -t packages < <("${GO}" list ./... | grep -v -e /test/integration/ -e '/test/release$')
fi

# The targets are read from the test files (func FuzzXxx(f *testing.F) at the start of a
# line, as gofmt writes it) rather than from go test -list, which would build every such
# package's test binary in a configuration nothing else uses: minutes on a cold cache.
targets=()
while IFS=$'\t' read -r pkg dir files; do
  for f in ${files}; do
    while read -r name; do
      targets+=("${pkg} ${name}")
    done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "${dir}/${f}")
  done
done < <("${GO}" list -f '{{.ImportPath}}{{"\t"}}{{.Dir}}{{"\t"}}{{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' "${packages[@]}")
if [[ -n ${FUZZ_WITHOUT:-} ]]; then
  kept=()
  declare -A without=()
  for target in "${targets[@]}"; do
    pkg=${target%% *}
    if [[ -z ${without[${pkg}]:-} ]]; then
      # The list is read whole first: grep -q stops at the first match, and with pipefail
      # the go list it cut short would count as a failure.
      deps=$("${GO}" list -test -deps "${pkg}")
      without[${pkg}]=no
      if grep -qxF "${FUZZ_WITHOUT}" <<<"${deps}"; then
        without[${pkg}]=yes
        echo "not fuzzed here (its tests depend on ${FUZZ_WITHOUT}; make soak fuzzes it): ${pkg}"
      fi
    fi
    if [[ ${without[${pkg}]} == no ]]; then
      kept+=("${target}")
    fi
  done
  targets=("${kept[@]}")
fi
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "no fuzz targets found" >&2
  exit 1
fi

if [[ -n ${report} ]]; then
  printf 'package\ttarget\texecs\ttime_fuzzed\twall\tresult\n' >"${report}"
fi
parallel=()
if [[ -n ${FUZZ_PARALLEL:-} ]]; then
  parallel=(-parallel "${FUZZ_PARALLEL}")
fi

log=$(mktemp)
trap 'rm -f "${log}"' EXIT
failures=()
start_all=${SECONDS}
echo "fuzzing ${#targets[@]} targets, ${FUZZTIME} each"
for target in "${targets[@]}"; do
  read -r pkg name <<<"${target}"
  echo "=== ${pkg} ${name}"
  start=${SECONDS}
  fuzz() {
    status=0
    "${GO}" test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME}" -fuzzminimizetime "${FUZZ_MINIMIZETIME}" "${parallel[@]}" "${pkg}" 2>&1 | tee "${log}" || status=$?
  }
  fuzz
  # Go's fuzzing engine can report its own -fuzztime deadline as the target's failure
  # ("context deadline exceeded", no failing input written) when the time runs out while it
  # minimizes a new input. That is no finding: the target runs once more, and fails only if
  # it fails again.
  if [[ ${status} -ne 0 ]] && grep -q '^    context deadline exceeded$' "${log}" && ! grep -q 'Failing input written to' "${log}"; then
    echo "--- ${name}: Go's fuzzing engine overran its own deadline; fuzzing it once more"
    fuzz
  fi
  wall=$((SECONDS - start))

  execs=0 fuzzed=0s
  last=$(grep -E '^fuzz: elapsed: [0-9hms.]+, execs: [0-9]+ ' "${log}" | tail -n 1 || true)
  if [[ ${last} =~ ^fuzz:\ elapsed:\ ([0-9hms.]+),\ execs:\ ([0-9]+)\  ]]; then
    fuzzed=${BASH_REMATCH[1]}
    execs=${BASH_REMATCH[2]}
  fi
  result=ok
  if [[ ${status} -ne 0 ]]; then
    result=FAIL
    crasher=$(sed -n 's/.*Failing input written to \(.*\)$/\1/p' "${log}" | tail -n 1)
    if [[ -n ${crasher} ]]; then
      dir=$("${GO}" list -f '{{.Dir}}' "${pkg}")
      failures+=("${pkg} ${name}: crasher ${dir#"${PORTCULLIS_ROOT}/"}/${crasher} (go test -run '${name}/$(basename "${crasher}")' ${pkg})")
    else
      failures+=("${pkg} ${name}: failed without a crasher (a seed failed, or the build did): see its output above")
    fi
  fi
  if [[ -n ${report} ]]; then
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${pkg}" "${name}" "${execs}" "${fuzzed}" "${wall}s" "${result}" >>"${report}"
  fi
done

echo "fuzzed ${#targets[@]} targets in $((SECONDS - start_all))s"
if [[ ${#failures[@]} -gt 0 ]]; then
  echo "${#failures[@]} fuzz target(s) failed:" >&2
  for f in "${failures[@]}"; do
    echo "  ${f}" >&2
  done
  exit 1
fi
