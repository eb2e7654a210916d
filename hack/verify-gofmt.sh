#!/usr/bin/env bash
# Fails, listing the files, when any Go file in the repository is not gofmt'ed.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"
unformatted=$(git ls-files --cached --others --exclude-standard -- '*.go' | xargs -r gofmt -l)
if [[ -n ${unformatted} ]]; then
  echo "These files need gofmt -w:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
