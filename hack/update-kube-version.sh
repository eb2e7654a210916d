#!/usr/bin/env bash
# Usage: hack/update-kube-version.sh v1.37.N
#
# Points go.mod at a Kubernetes release: requires k8s.io/kubernetes at that version and
# replaces every staging module that upstream's own go.mod replaces with its published
# v0.37.N, then tidies. The list of staging modules is read from upstream, never kept here.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

if [[ $# -ne 1 || ! $1 =~ ^v1\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: $0 v1.MINOR.PATCH (got: ${*:-nothing})" >&2
  exit 2
fi
kube_version=$1
staging_version=$(portcullis::staging_version "${kube_version}")

cd "${PORTCULLIS_ROOT}"
gomod=$(portcullis::upstream_gomod "${kube_version}")
if [[ -z ${gomod} || ! -f ${gomod} ]]; then
  echo "error: could not fetch k8s.io/kubernetes@${kube_version} from the module proxy" >&2
  exit 1
fi

# Drop the replaces of the previous release first, so a module upstream no longer stages
# does not linger.
for old in $(go mod edit -json | sed -n 's#^[[:space:]]*"Path": "\(k8s\.io/[^"]*\)",\{0,1\}$#\1#p' | sort -u); do
  [[ ${old} == k8s.io/kubernetes ]] && continue
  go mod edit -dropreplace="${old}" 2>/dev/null || true
done

args=(-require="k8s.io/kubernetes@${kube_version}")
count=0
while read -r module; do
  args+=(-replace="${module}=${module}@${staging_version}")
  count=$((count + 1))
done < <(portcullis::staging_modules "${gomod}")
go mod edit "${args[@]}"
go mod tidy

# Our staging API module builds on the same release's API types.
(
  cd staging/src/github.com/portcullis-k8s/api
  go mod edit -require="k8s.io/api@${staging_version}" -require="k8s.io/apimachinery@${staging_version}"
  go mod tidy
)

# A new Kubernetes release is a new Portcullis release, the first on it; the deploy kit names
# the release (the patch's image tag, the systemd install path).
old_version=$(tr -d '[:space:]' <VERSION)
new_version="${kube_version}+portcullis.1"
if [[ ${old_version} != "${new_version}" ]]; then
  echo "${new_version}" >VERSION
  old_tag=${old_version//+/_} new_tag=${new_version//+/_}
  sed -i -e "s/${old_version//./\\.}/${new_version}/g" -e "s/${old_tag//./\\.}/${new_tag}/g" \
    build/deploy/static-pod/kube-apiserver.yaml build/deploy/systemd/kube-apiserver.env
fi

echo "go.mod now requires k8s.io/kubernetes ${kube_version} with ${count} staging modules at ${staging_version}; VERSION is ${new_version}."
echo "Remember the pinned lists in pkg/admission/testdata, and CHANGELOG.md: what changed upstream that matters here."
# The profile names upstream's functions: after a bump, the ones that moved or changed no
# longer match and the build silently optimizes less. A fresh profile restores it.
echo "Then rebuild and regenerate the PGO profile: make pgo-profile (writes cmd/kube-apiserver/default.pgo; commit it)."
