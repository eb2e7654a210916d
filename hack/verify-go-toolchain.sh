#!/usr/bin/env bash
# Fails when a supported minor's Go toolchain (its go.mod's toolchain line) is older than the
# one upstream's release of that patch declares (k8s.io/kubernetes's .go-version): it would
# lack standard-library fixes upstream's own release has (docs/compatibility.md, "Go
# toolchain"). Also checks that the modules building that minor's upstream binaries and etcd
# (releases/<minor>/upstream, releases/<minor>/etcd) name the same toolchain, and that the
# minor being built (KUBE_MINOR) runs it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

# older A B: whether Go version A (1.N.P) is older than B.
older() {
  local a_major a_minor a_patch b_major b_minor b_patch
  IFS=. read -r a_major a_minor a_patch <<<"$1"
  IFS=. read -r b_major b_minor b_patch <<<"$2"
  ((a_major < b_major || (a_major == b_major && a_minor < b_minor) ||
    (a_major == b_major && a_minor == b_minor && ${a_patch:-0} < ${b_patch:-0})))
}

failed=0
for minor in $(portcullis::minors) $(portcullis::preview); do
  modfile=$(portcullis::minor_dir "${minor}")/go.mod
  modfile=${modfile#./}
  toolchain=$(portcullis::toolchain "${minor}")
  if [[ -z ${toolchain} ]]; then
    echo "${modfile}: no toolchain line (want one at least as new as upstream's .go-version)" >&2
    failed=1
    continue
  fi
  kube_version=$(portcullis::gomod_kube_version "${minor}")
  upstream_dir=$(go mod download -json "k8s.io/kubernetes@${kube_version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  upstream=$(tr -d '[:space:]' <"${upstream_dir}/.go-version")
  if older "${toolchain#go}" "${upstream}"; then
    echo "${modfile}: toolchain ${toolchain} is older than go${upstream}, which k8s.io/kubernetes ${kube_version} declares (.go-version): move the toolchain line forward" >&2
    failed=1
  fi
  for mod in "$(portcullis::upstream_module_dir "${minor}")/go.mod" "$(portcullis::etcd_module_dir "${minor}")/go.mod"; do
    theirs=$(sed -n 's/^toolchain //p' "${mod}" 2>/dev/null)
    if [[ ${theirs} != "${toolchain}" ]]; then
      echo "${mod}: toolchain ${theirs:-missing}, ${modfile}'s is ${toolchain}: one toolchain for a minor (hack/update-kube-version.sh ${kube_version} writes it)" >&2
      failed=1
    fi
  done
  echo "Kubernetes ${minor}: Go toolchain ${toolchain}; upstream ${kube_version} declares go${upstream}."
done
want=$(portcullis::toolchain)
in_use=$(go env GOVERSION)
if [[ ${in_use} != "${want}" ]]; then
  echo "the go command runs ${in_use}, not ${want} ($(portcullis::kube_minor)'s)" >&2
  failed=1
fi
exit "${failed}"
