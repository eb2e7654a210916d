#!/usr/bin/env bash
# Fails when a supported minor's Kubernetes pins disagree (go.mod for the newest minor,
# releases/1.N/go.mod for the others): every module upstream's go.mod replaces with
# its staging directory must be replaced here with v0.<minor>.<patch> of the k8s.io/kubernetes
# version we require, and nothing else under k8s.io may be replaced. Also checks that go.mod
# is tidy and that VERSION is built on the same Kubernetes release.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"
# Each go command below names its go.mod: none of the caller's (make verify KUBE_MINOR=...'s
# -modfile and tags).
export GOFLAGS=-trimpath GOWORK=off

# Every supported minor's pins: go.mod for the newest, releases/1.N/go.mod for the others.
status=0
for minor in $(portcullis::minors) $(portcullis::preview); do
  export GOTOOLCHAIN=$(portcullis::toolchain "${minor}")
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

  # Upstream's go line and godebug settings.
  upstream_go=$(sed -n 's/^go //p' "${gomod}")
  have_go=$(go mod edit -json "${modfile}" | sed -n 's/^[[:space:]]*"Go": "\(.*\)",$/\1/p')
  if [[ ${have_go} != "${upstream_go}" ]]; then
    echo "${modfile}: go ${have_go}, upstream ${kube_version}'s is go ${upstream_go}" >&2
    failed=1
  fi
  want_godebug=$(portcullis::upstream_godebug "${gomod}" | sort)
  have_godebug=$(portcullis::upstream_godebug "${modfile}" | sort)
  if [[ ${have_godebug} != "${want_godebug}" ]]; then
    echo "${modfile}: godebug ${have_godebug:-none}, upstream ${kube_version}'s is ${want_godebug:-none}" >&2
    failed=1
  fi

  # Stock's module: k8s.io/kubernetes alone at the same release, upstream's replaces, go line
  # and godebug, tidy. etcd's: the version that release's kubeadm deploys, tidy.
  upstream_module=$(portcullis::upstream_module_dir "${minor}")
  etcd_module=$(portcullis::etcd_module_dir "${minor}")
  if [[ ! -f ${upstream_module}/go.mod || ! -f ${etcd_module}/go.mod ]]; then
    echo "${upstream_module}/go.mod or ${etcd_module}/go.mod is missing" >&2
    failed=1
  else
    # What it asks for: k8s.io/kubernetes at the patch (tidy marks every requirement of a
    # module of tools indirect, so none may be direct), upstream's staging modules replaced at
    # the patch's v0.N.P and nothing else, upstream's commands as its tools.
    stock_json=$(go mod edit -json "${upstream_module}/go.mod")
    stock_requires=$(awk '/"Require"/ { r = 1 } r && /"Path"/ { p = $2 } r && /"Version"/ { v = $2 } r && /"Indirect": true/ { i = 1 } r && /^\t\t}/ { print p, v, (i ? "indirect" : "direct"); i = 0 } /^\t\]/ { r = 0 }' <<<"${stock_json}" | tr -d '",')
    stock_replaces=$(awk '/"Replace"/ { r = 1 } r && /"New"/ { n = 1 } r && /"Path"/ { if (n) np = $2; else op = $2 } r && /"Version"/ && n { print op, np, $2; n = 0 }' <<<"${stock_json}" | tr -d '",' | sort)
    want_replaces=$(for module in ${expected}; do echo "${module} ${module} ${want_version}"; done | sort)
    stock_tools=$(sed -n '/^tool (/,/^)/s/^[[:space:]]\+\([^[:space:]]*\)$/\1/p' "${upstream_module}/go.mod" | sort)
    if ! grep -qx "k8s.io/kubernetes ${kube_version} [a-z]*" <<<"${stock_requires}" || grep -q " direct$" <<<"${stock_requires}" ||
      [[ ${stock_replaces} != "${want_replaces}" || ${stock_tools} != "$(portcullis::upstream_tools | sort)" ]] ||
      [[ $(sed -n 's/^go //p' "${upstream_module}/go.mod") != "${upstream_go}" ]] ||
      [[ $(portcullis::upstream_godebug "${upstream_module}/go.mod" | sort) != "${want_godebug}" ]]; then
      echo "${upstream_module}/go.mod is not stock ${kube_version}'s module (k8s.io/kubernetes, its staging modules at ${want_version}, upstream's go line and godebug)" >&2
      failed=1
    fi
    etcd_version=$(portcullis::kubeadm_etcd_version "${kube_version}")
    if ! go mod edit -json "${etcd_module}/go.mod" | grep -A1 '"Path": "go.etcd.io/etcd/server/v3"' | grep -q "\"Version\": \"v${etcd_version}\""; then
      echo "${etcd_module}/go.mod does not require go.etcd.io/etcd/server/v3 v${etcd_version}, which kubeadm ${kube_version} deploys" >&2
      failed=1
    fi
    if ! (cd "${etcd_module}" && go mod tidy -e -diff >/dev/null 2>&1); then
      echo "${etcd_module}/go.mod and its go.sum are not tidy" >&2
      failed=1
    fi
    # Stock's module as hack/update-kube-version.sh tidies it, in a copy.
    tidied=$(mktemp -d)
    cp "${upstream_module}/go.mod" "${upstream_module}/go.sum" "${tidied}/"
    if ! (cd "${tidied}" && portcullis::tidy_upstream_module "${kube_version}" >/dev/null 2>&1) ||
      ! cmp -s "${tidied}/go.mod" "${upstream_module}/go.mod" || ! cmp -s "${tidied}/go.sum" "${upstream_module}/go.sum"; then
      echo "${upstream_module}/go.mod and its go.sum are not tidy (hack/lib/init.sh's portcullis::tidy_upstream_module)" >&2
      failed=1
    fi
    rm -rf "${tidied}"
  fi

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

# Our staging API module builds on the oldest minor's API types and go line, so that it raises
# nothing in any minor's graph (docs/compatibility.md, "Exactly upstream's build").
oldest=$(portcullis::minors | head -n 1)
oldest_kube=$(portcullis::gomod_kube_version "${oldest}")
oldest_gomod=$(portcullis::upstream_gomod "${oldest_kube}")
staging_api=staging/src/github.com/portcullis-k8s/api
for module in k8s.io/api k8s.io/apimachinery; do
  have=$(cd "${staging_api}" && go mod edit -json | grep -A1 "\"Path\": \"${module}\"" | sed -n 's/.*"Version": "\(.*\)".*/\1/p' | head -1)
  if [[ ${have} != "$(portcullis::staging_version "${oldest_kube}")" ]]; then
    echo "${staging_api}/go.mod: ${module} ${have:-missing}, want $(portcullis::staging_version "${oldest_kube}"), the oldest minor's (hack/update-kube-version.sh ${oldest_kube})" >&2
    status=1
  fi
done
if [[ $(sed -n 's/^go //p' "${staging_api}/go.mod") != "$(sed -n 's/^go //p' "${oldest_gomod}")" ]]; then
  echo "${staging_api}/go.mod: go $(sed -n 's/^go //p' "${staging_api}/go.mod"), want the oldest minor's, go $(sed -n 's/^go //p' "${oldest_gomod}")" >&2
  status=1
fi
if ! (cd "${staging_api}" && go mod tidy -diff >/dev/null 2>&1); then
  echo "${staging_api}/go.mod and its go.sum are not tidy" >&2
  status=1
fi

# Each minor's release counter: a release CHANGELOG.md no longer calls unreleased has been cut
# (tagged as its version); once the bytes that minor ships could differ from the tag's - its
# pins and VERSION, the build (Makefile, build/, hack/lib), LICENSE and NOTICE, any source that
# is not a test or a doc - the minor's VERSION must name a new release (+portcullis.K+1, or a
# new patch), with its CHANGELOG section and its line's entry in pkg/releases. Another minor's
# bump that tidies this minor's go.sum is such a change; another minor's own files are not.
# The working tree is compared, so that uncommitted work counts too.
for minor in $(portcullis::minors); do
  version=$(portcullis::version "${minor}")
  minor_dir=$(portcullis::minor_dir "${minor}")
  shipped=(cmd pkg plugin staging build hack/lib Makefile LICENSE NOTICE
    ':(exclude)*_test.go' ':(exclude)**/testdata/**' ':(exclude)*.md')
  if [[ ${minor_dir} == . ]]; then
    shipped+=(go.mod go.sum VERSION)
  else
    # The deploy kit names the newest minor's release, and each older release's copy is
    # renamed to its own: the newest minor's bump, which renames the kit, changes nothing an
    # older release ships (a change of the kit's own, which does, is not told apart here).
    shipped+=("${minor_dir}/go.mod" "${minor_dir}/go.sum" "${minor_dir}/VERSION" ':(exclude)build/deploy')
  fi
  case $(portcullis::changelog_status "${version}") in
  unreleased) continue ;;
  missing)
    echo "CHANGELOG.md has no section for ${version} (${minor}'s VERSION): add one, '— unreleased' until it is cut" >&2
    status=1
    continue
    ;;
  esac
  if ! git rev-parse -q --verify "refs/tags/${version}" >/dev/null; then
    echo "${version} (${minor}) is released in CHANGELOG.md, but no tag names it: tag the commit it was cut from" >&2
    status=1
    continue
  fi
  if ! git diff --quiet "refs/tags/${version}" -- "${shipped[@]}" ||
    [[ -n $(git ls-files --others --exclude-standard -- "${shipped[@]}") ]]; then
    echo "${minor} ships other bytes than ${version} (git diff ${version} -- ${shipped[*]}): raise its counter (hack/update-kube-version.sh --raise ${minor})" >&2
    status=1
  fi
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
