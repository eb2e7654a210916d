#!/usr/bin/env bash
# Usage: hack/update-kube-version.sh v1.N.P
#
# Points one supported minor's pins at a Kubernetes patch release, leaving the other minors'
# alone: the newest minor's go.mod (the default build) or releases/1.N/go.mod. It requires
# k8s.io/kubernetes at that version and replaces every staging module that upstream's own
# go.mod replaces with its published v0.N.P, then tidies. The list of staging modules is read
# from upstream, never kept here. A minor not in releases/minors is refused: adding or
# dropping a minor is a change of its own (docs/registry.md, "Kubernetes minors").
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

if [[ $# -ne 1 || ! $1 =~ ^v1\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: $0 v1.MINOR.PATCH (got: ${*:-nothing})" >&2
  exit 2
fi
kube_version=$1
staging_version=$(portcullis::staging_version "${kube_version}")
minor=${kube_version#v}
minor=${minor%.*}
PORTCULLIS_KUBE_MINOR=${minor}
portcullis::kube_minor >/dev/null
minor_dir=$(portcullis::minor_dir "${minor}")
modfile=${minor_dir}/go.mod
# The go commands below read and write that minor's go.mod (and go.sum beside it).
modflags=()
if [[ ${minor_dir} != . ]]; then
  modflags=(-modfile="${modfile}")
fi

cd "${PORTCULLIS_ROOT}"
gomod=$(portcullis::upstream_gomod "${kube_version}")
if [[ -z ${gomod} || ! -f ${gomod} ]]; then
  echo "error: could not fetch k8s.io/kubernetes@${kube_version} from the module proxy" >&2
  exit 1
fi

# An older minor's pins start from the newest minor's go.mod (its tools and replaces) less
# every requirement but Kubernetes itself: tidy adds back what our packages import, each
# module at the version that minor's Kubernetes asks for, never the newest minor's.
if [[ ${minor_dir} != . ]]; then
  cp go.mod "${modfile}"
  cp go.sum "${minor_dir}/go.sum"
  go mod edit -json go.mod | awk '
    /"Require": \[/ { inrequire = 1 }
    inrequire && /^\t\]/ { inrequire = 0 }
    inrequire && /"Path":/ { gsub(/[",]/, "", $2); print $2 }
  ' | while read -r module; do
    [[ ${module} == k8s.io/kubernetes ]] && continue
    go mod edit "${modflags[@]}" -droprequire="${module}"
  done
fi

# Drop the replaces of the previous release first, so a module upstream no longer stages
# does not linger.
for old in $(go mod edit -json "${modfile}" | sed -n 's#^[[:space:]]*"Path": "\(k8s\.io/[^"]*\)",\{0,1\}$#\1#p' | sort -u); do
  [[ ${old} == k8s.io/kubernetes ]] && continue
  go mod edit "${modflags[@]}" -dropreplace="${old}" 2>/dev/null || true
done

args=(-require="k8s.io/kubernetes@${kube_version}")
count=0
while read -r module; do
  args+=(-replace="${module}=${module}@${staging_version}")
  count=$((count + 1))
done < <(portcullis::staging_modules "${gomod}")
go mod edit "${modflags[@]}" "${args[@]}"
for module in api apimachinery apiserver client-go component-base; do
  go mod edit "${modflags[@]}" -require="k8s.io/${module}@${staging_version}"
done
go mod edit "${modflags[@]}" -require=github.com/portcullis-k8s/api@v0.0.0
go mod edit "${modflags[@]}" -replace=github.com/portcullis-k8s/api=./staging/src/github.com/portcullis-k8s/api
# tidy reads the files of every build tag: for an older minor, the newest minor's files import
# packages its staging modules lack, which -e lets pass (building with the minor's tag,
# make build KUBE_MINOR=..., checks what the minor's files need).
if [[ ${minor_dir} == . ]]; then
  go mod tidy
else
  go mod tidy -e "${modflags[@]}"
fi

# Our staging API module builds on the newest minor's API types (an older minor's go.mod
# replaces them with its own). Its requirements reach every older minor's go.mod: those are
# tidied again, their Kubernetes pins unchanged.
if [[ ${minor_dir} == . ]]; then
  (
    cd staging/src/github.com/portcullis-k8s/api
    go mod edit -require="k8s.io/api@${staging_version}" -require="k8s.io/apimachinery@${staging_version}"
    go mod tidy
  )
  for older in $(portcullis::minors); do
    [[ ${older} == "${minor}" ]] && continue
    go mod tidy -e -modfile="$(portcullis::minor_dir "${older}")/go.mod"
  done
fi

# A new Kubernetes release is a new Portcullis release, the first on it; the deploy kit names
# the newest minor's release (the patch's image tag, the systemd install path, the Kubernetes
# release its comments describe).
old_version=$(portcullis::version "${minor}")
new_version="${kube_version}+portcullis.1"
if [[ ${old_version} != "${new_version}" ]]; then
  echo "${new_version}" >"${minor_dir}/VERSION"
fi
if [[ ${minor_dir} == . && ${old_version} != "${new_version}" ]]; then
  portcullis::release_renames "${old_version}" "${new_version}"
  mapfile -t kit < <(portcullis::deploy_kit)
  sed -i "${release_renames[@]}" "${kit[@]}"
fi

echo "${modfile} now requires k8s.io/kubernetes ${kube_version} with ${count} staging modules at ${staging_version}; ${minor_dir}/VERSION is ${new_version}."
echo "Remember the pinned lists in pkg/admission/testdata, and CHANGELOG.md: what changed upstream that matters here."
# The profile names upstream's functions: after a bump, the ones that moved or changed no
# longer match and the build silently optimizes less. A fresh profile restores it.
echo "Then rebuild and regenerate the PGO profile: make pgo-profile (writes cmd/kube-apiserver/default.pgo; commit it)."
