#!/usr/bin/env bash
# Writes NOTICE (or the file given): Portcullis's notice, then the NOTICE file of every module kube-apiserver
# links that has one, verbatim, as Apache-2.0 section 4(d) asks of a redistribution. Run it
# after a Kubernetes bump (hack/update-kube-version.sh); make verify fails while NOTICE is not
# what it writes.
#
# usage: hack/update-notice.sh [OUTPUT]
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
out=${1:-NOTICE}
[[ ${out} == /* ]] || out=${PWD}/${out}
cd "${PORTCULLIS_ROOT}"
GO=${GO:-go}
export CGO_ENABLED=0 GOOS=linux

{
  cat <<'HEADER'
Portcullis
Copyright 2026 The Portcullis Authors.

This product is a build of kube-apiserver from the Kubernetes project
(https://github.com/kubernetes/kubernetes, k8s.io/kubernetes and its staging modules),
Copyright The Kubernetes Authors, licensed under the Apache License, Version 2.0, with
admission plugins and tools of its own. It patches no upstream file: it composes upstream's
exported code. The Go modules it links are listed, with their versions and licences, in
the SBOM each release ships beside each binary (kube-apiserver.cdx.json, CycloneDX).

The notices of the modules it links that carry a NOTICE file follow, verbatim.
HEADER
  while read -r module dir; do
    for f in "${dir}"/NOTICE "${dir}"/NOTICE.txt "${dir}"/NOTICE.md; do
      [[ -f ${f} ]] || continue
      printf '\n---- %s (%s) ----\n\n' "${module}" "$(basename "${f}")"
      cat "${f}"
      [[ -z $(tail -c1 "${f}") ]] || echo
    done
  done < <("${GO}" list -deps -f '{{with .Module}}{{if not .Main}}{{if .Replace}}{{.Replace.Path}}@{{.Replace.Version}} {{.Replace.Dir}}{{else}}{{.Path}}@{{.Version}} {{.Dir}}{{end}}{{end}}{{end}}' ./cmd/kube-apiserver | LC_ALL=C sort -u)
} >"${out}.tmp"
mv "${out}.tmp" "${out}"
echo "wrote ${out}"
