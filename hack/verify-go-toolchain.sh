#!/usr/bin/env bash
# Fails when the Go toolchain we build with (go.mod's toolchain line) is an older patch
# release of the same minor as the one upstream declares for the Kubernetes release we pin
# (k8s.io/kubernetes's .go-version): it would lack standard-library security fixes that
# upstream's own release has. A newer minor is fine. Also checks that every go.mod of the
# repository names the same toolchain, and that it is the one in use.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

ours=${GOTOOLCHAIN#go}
if [[ -z ${ours} ]]; then
  echo "go.mod: no toolchain line (want one at least as new as upstream's .go-version)" >&2
  exit 1
fi
kube_version=$(portcullis::gomod_kube_version)
upstream_dir=$(cd "${PORTCULLIS_ROOT}" && go mod download -json "k8s.io/kubernetes@${kube_version}" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
upstream=$(tr -d '[:space:]' <"${upstream_dir}/.go-version")

failed=0
IFS=. read -r our_major our_minor our_patch <<<"${ours}"
IFS=. read -r up_major up_minor up_patch <<<"${upstream}"
if ((our_major < up_major || (our_major == up_major && our_minor < up_minor) ||
  (our_major == up_major && our_minor == up_minor && ${our_patch:-0} < ${up_patch:-0}))); then
  echo "go.mod: toolchain go${ours} is older than go${upstream}, which k8s.io/kubernetes ${kube_version} declares (.go-version): move the toolchain line forward" >&2
  failed=1
fi
for mod in staging/src/github.com/portcullis-k8s/api/go.mod build/image/go.mod; do
  theirs=$(sed -n 's/^toolchain //p' "${mod}")
  if [[ -n ${theirs} && ${theirs} != "${GOTOOLCHAIN}" ]]; then
    echo "${mod}: toolchain ${theirs}, go.mod's is ${GOTOOLCHAIN}: one toolchain for the repository" >&2
    failed=1
  fi
done
in_use=$(go env GOVERSION)
if [[ ${in_use} != "${GOTOOLCHAIN}" ]]; then
  echo "the go command runs ${in_use}, not ${GOTOOLCHAIN}" >&2
  failed=1
fi
if ((failed == 0)); then
  echo "Go toolchain ${GOTOOLCHAIN}; upstream ${kube_version} declares go${upstream}."
fi
exit "${failed}"
