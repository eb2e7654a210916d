#!/usr/bin/env bash
# Fails when generated code is stale: regenerates into the tree and compares every directory
# the generators write into (the staging API module, pkg/apis, pkg/generated and the API rule
# report) with what was there before, restoring it when they differ.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

mapfile -t paths < <(portcullis::generated_paths)
before=$(mktemp -d)
trap 'rm -rf "${before}"' EXIT
for p in "${paths[@]}"; do
  mkdir -p "${before}/${p}"
  if [[ -d "${p}" ]]; then
    cp -a "${p}/." "${before}/${p}/"
  fi
done
hack/update-codegen.sh
stale=false
for p in "${paths[@]}"; do
  if ! diff -r "${before}/${p}" "${p}" >/dev/null; then
    diff -ru "${before}/${p}" "${p}" >&2 || true
    stale=true
  fi
done
if [[ "${stale}" == true ]]; then
  # Put the tree back as it was: files the generators added go, the rest is copied back.
  for p in "${paths[@]}"; do
    while IFS= read -r -d '' f; do
      [[ -e "${before}/${f}" ]] || rm -f "${f}"
    done < <(find "${p}" -type f -print0)
    cp -a "${before}/${p}/." "${p}/"
  done
  echo "Generated code is stale: run hack/update-codegen.sh" >&2
  exit 1
fi
