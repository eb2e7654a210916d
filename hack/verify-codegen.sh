#!/usr/bin/env bash
# Fails when generated code is stale: regenerates into the tree and compares with git's view.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

staging=staging/src/github.com/portcullis-k8s/api
before=$(mktemp -d)
trap 'rm -rf "${before}"' EXIT
cp -a "${staging}/." "${before}/"
hack/update-codegen.sh
if ! diff -r "${before}" "${staging}" >/dev/null; then
  diff -ru "${before}" "${staging}" >&2 || true
  cp -a "${before}/." "${staging}/"
  echo "Generated code is stale: run hack/update-codegen.sh" >&2
  exit 1
fi
