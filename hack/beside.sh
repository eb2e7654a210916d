#!/usr/bin/env bash
# Runs stages at once: the first in front, the others beside it, niced for CPU and I/O, so that
# they take what the first leaves idle rather than slowing it. Stages that mostly wait (servers
# starting, tests polling) gain the most: make test runs the release tests beside the
# integration suites this way.
#
#   hack/beside.sh NAME COMMAND [NAME COMMAND]...
#
# Each COMMAND is a bash command line, run as a stage of its name (hack/stage.sh), with no
# standard input. The first's output streams; each other's goes to a file, printed whole when
# all have ended (or when this script does, whatever the reason), so that they never
# interleave. Exits with the first failed stage's status, in the order given, after all have
# ended. An interrupt or a termination ends them all at once.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
set +o errexit

if [[ $# -lt 2 || $(($# % 2)) -ne 0 ]]; then
  echo "usage: $0 NAME COMMAND [NAME COMMAND]..." >&2
  exit 2
fi
stage=${PORTCULLIS_ROOT}/hack/stage.sh
names=() jobs_=() logs=()
printed=false
# print_beside prints the other stages' output, once.
print_beside() {
  local i
  if [[ ${printed} == true ]]; then
    return
  fi
  printed=true
  for ((i = 1; i < ${#names[@]}; i++)); do
    echo "=== ${names[i]}'s output (it ran beside ${names[0]})${1:-}:"
    cat "${logs[i]}"
    rm -f "${logs[i]}"
  done
}
# On the way out (a signal, or any other end), what a stage started is ended, waited for, and
# the others' output printed.
trap 'for job in "${jobs_[@]}"; do portcullis::kill_tree "${job}"; done; wait; print_beside " (interrupted)"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The stages stay in this script's process group (a terminal's interrupt, or what ends the
# group, reaches them too) and session (a session of its own would be a scheduling group of
# its own, which Linux's autogroup gives an equal share of the CPU whatever its nice). This
# script waits for them with wait, which a trapped signal interrupts at once.
while [[ $# -gt 0 ]]; do
  names+=("$1")
  if [[ ${#names[@]} -eq 1 ]]; then
    logs+=("")
    "${stage}" "$1" bash -c "$2" </dev/null &
  else
    logs+=("$(mktemp)")
    echo "=== ${1} runs beside ${names[0]}, niced; its output is printed when all have ended (meanwhile in ${logs[-1]})"
    nice -n 10 ionice -c 3 "${stage}" "$1" bash -c "$2" </dev/null >"${logs[-1]}" 2>&1 &
  fi
  jobs_+=($!)
  shift 2
done

status=0
for ((i = 0; i < ${#jobs_[@]}; i++)); do
  if [[ ${i} -eq 1 && -n $(jobs -rp) ]]; then
    echo "=== ${names[0]} has ended; waiting for what runs beside it"
  fi
  job_status=0
  wait "${jobs_[i]}" || job_status=$?
  if [[ ${status} -eq 0 ]]; then
    status=${job_status}
  fi
done
print_beside
exit "${status}"
