#!/usr/bin/env bash
# Fails when a supported minor's Go toolchain (its go.mod's toolchain line) is not a patch of the
# Go minor that upstream's release of that Kubernetes patch declares (k8s.io/kubernetes's
# .go-version), or is an older patch than upstream's: the first would change what the runtime
# and the standard library do, the second would lack fixes upstream's own release has
# (docs/compatibility.md, "Go toolchain"). Also checks that the modules building that minor's
# upstream binaries and etcd (releases/<minor>/upstream, releases/<minor>/etcd) name the same
# toolchain, that docs/compatibility.md's table says what the files say, and that the minor
# being built (KUBE_MINOR) runs it.
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
  upstream_dir=$(portcullis::download "k8s.io/kubernetes@${kube_version}" Dir)
  upstream=$(tr -d '[:space:]' <"${upstream_dir}/.go-version")
  if [[ ${toolchain%.*} != "go${upstream%.*}" ]]; then
    echo "${modfile}: toolchain ${toolchain} is not a patch of go${upstream%.*}, the Go that k8s.io/kubernetes ${kube_version} declares (.go-version: go${upstream}): hack/update-go-toolchain.sh" >&2
    failed=1
  elif older "${toolchain#go}" "${upstream}"; then
    echo "${modfile}: toolchain ${toolchain} is older than go${upstream}, which k8s.io/kubernetes ${kube_version} declares (.go-version): hack/update-go-toolchain.sh" >&2
    failed=1
  fi
  # docs/compatibility.md's row: | minor | upstream's patch declares | built here with | ... |
  row=$(grep -E "^[[:space:]]*\| ${minor//./\\.} \| go[0-9.]+ \| go[0-9.]+ \|" docs/compatibility.md | sed 's/^[[:space:]]*//' || true)
  if [[ ${row} != "| ${minor} | go${upstream} | ${toolchain} |"* ]]; then
    echo "docs/compatibility.md's toolchain table: want the row \"| ${minor} | go${upstream} | ${toolchain} | ...\", got \"${row:-none}\"" >&2
    failed=1
  fi
  for mod in "$(portcullis::upstream_module_dir "${minor}")/go.mod" "$(portcullis::etcd_module_dir "${minor}")/go.mod"; do
    theirs=$(sed -n 's/^toolchain //p' "${mod}" 2>/dev/null || true)
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
