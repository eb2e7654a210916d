#!/usr/bin/env bash
# Fails when a supported minor's Kubernetes pins disagree (go.mod for the newest minor,
# releases/1.N/go.mod for the others): every module upstream's go.mod replaces with
# its staging directory must be replaced here with v0.<minor>.<patch> of the k8s.io/kubernetes
# version we require, and nothing else under k8s.io may be replaced. Also checks that go.mod
# is tidy and that VERSION is built on the same Kubernetes release.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

# Every supported minor's pins: go.mod for the newest, releases/1.N/go.mod for the others.
status=0
for minor in $(portcullis::minors); do
  minor_dir=$(portcullis::minor_dir "${minor}")
  modfile=${minor_dir}/go.mod
  modfile=${modfile#./}
  kube_version=$(portcullis::gomod_kube_version "${minor}")
  if [[ -z ${kube_version} ]]; then
    echo "${modfile}: no requirement on k8s.io/kubernetes" >&2
    exit 1
  fi
  want_version=$(portcullis::staging_version "${kube_version}")
  gomod=$(portcullis::upstream_gomod "${kube_version}")

  failed=0
  expected=$(portcullis::staging_modules "${gomod}")
  # Our replaces of k8s.io modules, as "old new version".
  actual=$(go mod edit -json "${modfile}" | awk '
    /"Replace": \[/ { inreplace = 1 }
    inreplace && /"Old": \{/ { side = "old" }
    inreplace && /"New": \{/ { side = "new" }
    inreplace && /"Path":/ { gsub(/[",]/, "", $2); path[side] = $2 }
    inreplace && /"Version":/ && side == "new" { gsub(/[",]/, "", $2); print path["old"], path["new"], $2 }
  ' | grep '^k8s\.io/' || true)

  for module in ${expected}; do
    line=$(grep "^${module} " <<<"${actual}" || true)
    if [[ -z ${line} ]]; then
      echo "${modfile}: ${module} is not replaced; upstream ${kube_version} stages it (want ${module} => ${module} ${want_version})" >&2
      failed=1
      continue
    fi
    read -r _ new version <<<"${line}"
    if [[ ${new} != "${module}" || ${version} != "${want_version}" ]]; then
      echo "${modfile}: ${module} => ${new} ${version}, want ${module} ${want_version} to match k8s.io/kubernetes ${kube_version}" >&2
      failed=1
    fi
  done
  while read -r module _; do
    [[ -z ${module} ]] && continue
    if ! grep -qx "${module}" <<<"${expected}"; then
      echo "${modfile}: ${module} is replaced, but upstream ${kube_version} does not stage it" >&2
      failed=1
    fi
  done <<<"${actual}"

  staging_api=staging/src/github.com/portcullis-k8s/api
  for module in k8s.io/api k8s.io/apimachinery; do
    [[ ${minor_dir} == . ]] || break
    have=$(cd "${staging_api}" && go mod edit -json | grep -A1 "\"Path\": \"${module}\"" | sed -n 's/.*"Version": "\(.*\)".*/\1/p' | head -1)
    if [[ ${have} != "${want_version}" ]]; then
      echo "${staging_api}/go.mod: ${module} ${have:-missing}, want ${want_version} to match k8s.io/kubernetes ${kube_version}" >&2
      failed=1
    fi
  done

  if ! PORTCULLIS_KUBE_MINOR=${minor} build/version.sh >/dev/null; then
    failed=1
  fi

  if [[ ${minor_dir} == . ]]; then
    tidy=(go mod tidy -diff)
  else
    # As hack/update-kube-version.sh tidies an older minor's pins.
    tidy=(go mod tidy -e -diff -modfile="${modfile}")
  fi
  if ! "${tidy[@]}" >/dev/null 2>&1; then
    echo "${modfile} and its go.sum are not tidy: run ${tidy[*]/-diff/}" >&2
    failed=1
  fi

  if [[ ${failed} -ne 0 ]]; then
    echo "Fix the pins with: hack/update-kube-version.sh ${kube_version}" >&2
    status=1
    continue
  fi
  echo "${modfile} pins agree: k8s.io/kubernetes ${kube_version}, $(wc -w <<<"${expected}") staging modules at ${want_version}."
done

# The deploy kit names the newest minor's release: every Kubernetes version in it is that
# release's (v1.N.P) or its staging modules' (v0.N.P), which hack/update-kube-version.sh
# renames and build/release.sh renames again for each release's copy.
newest_kube=$(portcullis::version "$(portcullis::default_minor)")
newest_kube=${newest_kube%%+*}
while read -r file; do
  while read -r found; do
    if [[ ${found} != "${newest_kube}" && ${found} != "$(portcullis::staging_version "${newest_kube}")" ]]; then
      echo "${file} names ${found}; the deploy kit names the newest minor's Kubernetes, ${newest_kube} (hack/update-kube-version.sh renames it)" >&2
      status=1
    fi
  done < <(grep -oE 'v[01]\.[0-9]+\.[0-9]+' "${file}" || true)
done < <(portcullis::deploy_kit)
exit "${status}"
