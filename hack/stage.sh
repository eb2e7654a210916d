#!/usr/bin/env bash
# Runs a command as a named stage and says how long it took, so that every CI log shows where
# the time goes.
#
#   hack/stage.sh NAME COMMAND [ARG...]
#
# Prints "==> NAME" before and "<== NAME: 12.3 min (738 s), ok" (or "FAILED (exit N)") after,
# and exits with COMMAND's status. Stages nest: a stage started inside another is named
# "OUTER/NAME" (PORTCULLIS_STAGE is the enclosing stage's name). When PORTCULLIS_STAGE_LOG names
# a file, each stage appends one line to it as it ends, tab-separated: name, seconds, exit
# status, start (Unix time in microseconds). .ci/run prints that file as a table at its end, in
# the order the stages started; hack/measure-ci.sh reads it.
set -o nounset -o pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 NAME COMMAND [ARG...]" >&2
  exit 2
fi
name=$1
shift
if [[ -n ${PORTCULLIS_STAGE:-} ]]; then
  name=${PORTCULLIS_STAGE}/${name}
fi
export PORTCULLIS_STAGE=${name}

echo "==> ${name}"
start=${EPOCHREALTIME/[.,]/}
"$@"
status=$?
seconds=$(((${EPOCHREALTIME/[.,]/} - start) / 1000000))
result=ok
if [[ ${status} -ne 0 ]]; then
  result="FAILED (exit ${status})"
fi
printf '<== %s: %d.%d min (%d s), %s\n' "${name}" $((seconds / 60)) $((seconds % 60 * 10 / 60)) "${seconds}" "${result}"
if [[ -n ${PORTCULLIS_STAGE_LOG:-} ]]; then
  printf '%s\t%d\t%d\t%s\n' "${name}" "${seconds}" "${status}" "${start}" >>"${PORTCULLIS_STAGE_LOG}"
fi
exit "${status}"
