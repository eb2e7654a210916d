#!/usr/bin/env bash
# Fails when go.mod's Kubernetes pins disagree: every module upstream's go.mod replaces with
# its staging directory must be replaced here with v0.<minor>.<patch> of the k8s.io/kubernetes
# version we require, and nothing else under k8s.io may be replaced. Also checks that go.mod
# is tidy and that VERSION is built on the same Kubernetes release.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

kube_version=$(portcullis::gomod_kube_version)
if [[ -z ${kube_version} ]]; then
  echo "go.mod: no requirement on k8s.io/kubernetes" >&2
  exit 1
fi
want_version=$(portcullis::staging_version "${kube_version}")
gomod=$(portcullis::upstream_gomod "${kube_version}")

failed=0
expected=$(portcullis::staging_modules "${gomod}")
# Our replaces of k8s.io modules, as "old new version".
actual=$(go mod edit -json | awk '
  /"Replace": \[/ { inreplace = 1 }
  inreplace && /"Old": \{/ { side = "old" }
  inreplace && /"New": \{/ { side = "new" }
  inreplace && /"Path":/ { gsub(/[",]/, "", $2); path[side] = $2 }
  inreplace && /"Version":/ && side == "new" { gsub(/[",]/, "", $2); print path["old"], path["new"], $2 }
' | grep '^k8s\.io/' || true)

for module in ${expected}; do
  line=$(grep "^${module} " <<<"${actual}" || true)
  if [[ -z ${line} ]]; then
    echo "go.mod: ${module} is not replaced; upstream ${kube_version} stages it (want ${module} => ${module} ${want_version})" >&2
    failed=1
    continue
  fi
  read -r _ new version <<<"${line}"
  if [[ ${new} != "${module}" || ${version} != "${want_version}" ]]; then
    echo "go.mod: ${module} => ${new} ${version}, want ${module} ${want_version} to match k8s.io/kubernetes ${kube_version}" >&2
    failed=1
  fi
done
while read -r module _; do
  [[ -z ${module} ]] && continue
  if ! grep -qx "${module}" <<<"${expected}"; then
    echo "go.mod: ${module} is replaced, but upstream ${kube_version} does not stage it" >&2
    failed=1
  fi
done <<<"${actual}"

staging_api=staging/src/github.com/portcullis-k8s/api
for module in k8s.io/api k8s.io/apimachinery; do
  have=$(cd "${staging_api}" && go mod edit -json | grep -A1 "\"Path\": \"${module}\"" | sed -n 's/.*"Version": "\(.*\)".*/\1/p' | head -1)
  if [[ ${have} != "${want_version}" ]]; then
    echo "${staging_api}/go.mod: ${module} ${have:-missing}, want ${want_version} to match k8s.io/kubernetes ${kube_version}" >&2
    failed=1
  fi
done

if ! build/version.sh >/dev/null; then
  failed=1
fi

if ! go mod tidy -diff >/dev/null 2>&1; then
  echo "go.mod/go.sum are not tidy: run go mod tidy" >&2
  failed=1
fi

if [[ ${failed} -ne 0 ]]; then
  echo "Fix the pins with: hack/update-kube-version.sh ${kube_version}" >&2
  exit 1
fi
echo "go.mod pins agree: k8s.io/kubernetes ${kube_version}, $(wc -w <<<"${expected}") staging modules at ${want_version}."
