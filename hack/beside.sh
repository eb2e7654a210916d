#!/usr/bin/env bash
# Runs two stages at once: one mostly waiting (servers starting, tests polling) in the
# foreground, and one that computes beside it, niced, so that it takes the CPU the first leaves
# idle rather than slowing it. make test runs the integration suites beside the release tests
# this way.
#
#   hack/beside.sh NAME COMMAND BESIDE_NAME BESIDE_COMMAND
#
# Each COMMAND is a bash command line, run as a stage of its name (hack/stage.sh). The
# foreground's output streams; the other's is kept and printed whole when both have ended, so
# that the two never interleave. Exits non-zero if either failed, after both have ended; a
# signal ends both.
set -o nounset -o pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 NAME COMMAND BESIDE_NAME BESIDE_COMMAND" >&2
  exit 2
fi
stage=$(dirname "${BASH_SOURCE[0]}")/stage.sh
beside_log=$(mktemp)
# Job control puts the background stage in a process group of its own (not a session: a
# session of its own would be a scheduling group of its own, which Linux's autogroup gives an
# equal share of the CPU whatever its nice), so that a signal ends all of it.
set -m
nice -n 10 "${stage}" "$3" bash -c "$4" >"${beside_log}" 2>&1 &
beside=$!
set +m
trap 'kill -- "-${beside}" 2>/dev/null; rm -f "${beside_log}"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${stage}" "$1" bash -c "$2"
status=$?
beside_status=0
wait "${beside}" || beside_status=$?
echo "=== ${3}'s output (it ran beside ${1}):"
cat "${beside_log}"
if [[ ${status} -ne 0 ]]; then
  exit "${status}"
fi
exit "${beside_status}"
