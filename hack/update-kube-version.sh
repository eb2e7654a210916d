#!/usr/bin/env bash
# Usage: hack/update-kube-version.sh v1.N.P
#        hack/update-kube-version.sh v1.N.0-beta.K   (also -alpha.K, -rc.K: the preview lane)
#        hack/update-kube-version.sh --raise 1.N
#
# Moves one supported minor to a Kubernetes patch release, leaving the other minors' pins
# alone, and names the new release:
# - that minor's pins: the newest minor's go.mod (the default build) or releases/1.N/go.mod.
#   They require k8s.io/kubernetes at that version, replace every staging module upstream's own
#   go.mod replaces with its published v0.N.P, and take upstream's go line and godebug
#   settings; tidy adds what our packages import, each module at the version upstream's graph
#   selects (TestModuleGraphIsUpstreams names where the built binary still differs);
# - releases/1.N/upstream: the module that builds that minor's stock binaries from upstream's
#   graph alone (the parity suites' yardstick, kubeadm, kubectl, kube-controller-manager);
# - releases/1.N/etcd: the etcd server that version's kubeadm deploys;
# - the release: VERSION (v1.N.P+portcullis.1), CHANGELOG.md's section, README's and
#   compatibility.md's tables, the minor's line in pkg/releases, and for the newest minor the
#   deploy kit and the operator's and release guides (docs/operating.md, docs/release.md),
#   which name its release (portcullis::name_release).
# A pre-release is taken only for the preview lane (releases/preview), whose VERSION ends in
# +portcullis.0 and is never released. --raise names a minor's next release when the one its
# VERSION names was cut and what it ships changed (a rebuild: a Go patch, a source change).
# The list of staging modules is read from upstream, never kept here. A minor neither in
# releases/minors nor the preview is refused: adding or dropping a minor is a change of its
# own (docs/registry.md, "Adding a minor"). Each minor keeps its go.mod's toolchain line
# (hack/update-go-toolchain.sh moves it). Whatever it writes is put back when a step fails.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

usage="usage: $0 v1.MINOR.PATCH | v1.MINOR.0-beta.N (the preview lane; -alpha.N, -rc.N too) | --raise 1.MINOR (a release already cut, rebuilt)"

# All or nothing: what the script writes is put back as it was when a step fails (a module
# the proxy refuses half-way leaves no half-bumped tree). Taken once the arguments are known
# good, so that a mistyped command touches nothing.
backup_tree() {
  backup=$(mktemp -d)
  touched=(go.mod go.sum VERSION CHANGELOG.md README.md docs/compatibility.md pkg/releases/releases.go
    staging/src/github.com/portcullis-k8s/api/go.mod staging/src/github.com/portcullis-k8s/api/go.sum releases build/deploy)
  cp -a --parents "${touched[@]}" "${backup}"
  trap restore EXIT
}
restore() {
  local status=$?
  if ((status != 0)); then
    rm -rf releases build/deploy
    (cd "${backup}" && cp -a --parents "${touched[@]}" "${PORTCULLIS_ROOT}")
    echo "hack/update-kube-version.sh failed; the files it writes are as they were" >&2
  fi
  rm -rf "${backup}"
  exit "${status}"
}

# older_kube A B: whether Kubernetes version A (v1.N.P, or v1.N.P-beta.K: a pre-release comes
# before its release) is older than B.
older_kube() {
  [[ $1 != "$2" ]] || return 1
  local a=${1%%-*} b=${2%%-*}
  if [[ ${a} == "${b}" ]]; then
    # One patch: the pre-release is the older; two pre-releases sort as versions.
    [[ $1 == *-* && ( $2 != *-* || $(printf '%s\n' "${1#*-}" "${2#*-}" | sort -V | head -n 1) == "${1#*-}" ) ]]
    return
  fi
  [[ $(printf '%s\n' "${a}" "${b}" | sort -V | head -n 1) == "${a}" ]]
}

if [[ $# -eq 2 && $1 == --raise ]]; then
  PORTCULLIS_KUBE_MINOR=$2 portcullis::kube_minor >/dev/null
  if [[ $2 == "$(portcullis::preview)" ]]; then
    echo "error: $2 is the preview lane (releases/preview): it has no release to raise" >&2
    exit 2
  fi
  backup_tree
  portcullis::raise_release "$2"
  exit
fi
if [[ $# -ne 1 || ! $1 =~ ^v1\.([0-9]+)\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?$ ]]; then
  echo "${usage} (got: ${*:-nothing})" >&2
  exit 2
fi
kube_version=$1
staging_version=$(portcullis::staging_version "${kube_version}")
minor=1.${BASH_REMATCH[1]}
preview=false
if [[ ${minor} == "$(portcullis::preview)" ]]; then
  preview=true
elif [[ -n ${BASH_REMATCH[2]} ]]; then
  if grep -qx "${minor}" releases/minors; then
    echo "error: ${kube_version} is a pre-release of ${minor}, a supported minor: a supported minor takes releases only" >&2
  else
    echo "error: ${kube_version} is a pre-release: only the preview lane takes one (echo ${minor} >releases/preview first: docs/registry.md, \"Adding a minor\")" >&2
  fi
  exit 2
fi
export PORTCULLIS_KUBE_MINOR=${minor}
portcullis::kube_minor >/dev/null
minor_dir=$(portcullis::minor_dir "${minor}")
modfile=${minor_dir}/go.mod
# A minor only moves forward: going back would rename a release to an older Kubernetes, and
# undoing a bump is git's job (git checkout, then the bump of the version wanted).
if [[ -f ${modfile} ]]; then
  pinned=$(portcullis::gomod_kube_version "${minor}")
  if [[ -n ${pinned} ]] && older_kube "${kube_version}" "${pinned}"; then
    echo "error: ${minor} is pinned to ${pinned}: ${kube_version} is older (to undo a bump, check out the files it changed)" >&2
    exit 2
  fi
fi
backup_tree
mkdir -p "${minor_dir}"
# The minor's toolchain line; a lane without pins yet (the preview's first, a promoted
# preview's) takes its upstream module's, else the newest minor's.
GOTOOLCHAIN=$(portcullis::toolchain "${minor}" 2>/dev/null || true)
GOTOOLCHAIN=${GOTOOLCHAIN:-$(sed -n 's/^toolchain //p' "$(portcullis::upstream_module_dir "${minor}")/go.mod" 2>/dev/null || true)}
GOTOOLCHAIN=${GOTOOLCHAIN:-$(portcullis::toolchain "$(portcullis::default_minor)")}
export GOTOOLCHAIN
# Only the go.mod files named below: never the caller's -modfile or build tags.
export GOFLAGS=-trimpath
# The go commands below read and write that minor's go.mod (and go.sum beside it).
modflags=()
if [[ ${minor_dir} != . ]]; then
  modflags=(-modfile="${modfile}")
fi

gomod=$(portcullis::upstream_gomod "${kube_version}")
if [[ -z ${gomod} || ! -f ${gomod} ]]; then
  echo "error: the module proxy does not serve k8s.io/kubernetes@${kube_version} (asked by exact version)" >&2
  exit 1
fi
upstream_go=$(sed -n 's/^go //p' "${gomod}")
# The toolchain: the newest served patch of the Go upstream declares for this release
# (.go-version), when the minor's is of another Go minor or an older patch (a preview's first
# pins, a promotion, upstream moving its Go). The minor's files are written with it below.
upstream_go_version=$(tr -d '[:space:]' <"$(portcullis::download "k8s.io/kubernetes@${kube_version}" Dir)/.go-version")
if [[ ${GOTOOLCHAIN%.*} != "go${upstream_go_version%.*}" ]] || (( ${GOTOOLCHAIN##*.} < ${upstream_go_version##*.} )); then
  GOTOOLCHAIN=$(portcullis::newest_go_patch "${upstream_go_version}")
  echo "${minor} moves to ${GOTOOLCHAIN}: upstream's ${kube_version} declares go${upstream_go_version}" >&2
  if [[ -f ${modfile} ]]; then
    go mod edit "${modflags[@]}" -toolchain="${GOTOOLCHAIN}"
  fi
fi
# docs/compatibility.md's toolchain row (hack/verify-go-toolchain.sh holds it to the files):
# what upstream's patch declares moves with most patches.
toolchain_row="| ${minor} | go${upstream_go_version} | ${GOTOOLCHAIN} | $(portcullis::go_patch_difference "go${upstream_go_version}" "${GOTOOLCHAIN}") |"
if grep -qE "^[[:space:]]*\| ${minor//./\\.} \| go[0-9.]+ \| go[0-9.]+ \|" docs/compatibility.md; then
  sed -i -E "s#^([[:space:]]*)\| ${minor//./\\.} \| go[0-9.]+ \| go[0-9.]+ \|.*#\1${toolchain_row}#" docs/compatibility.md
elif ! ${preview}; then
  echo "docs/compatibility.md's toolchain table: add the row \"${toolchain_row}\"" >&2
fi
mapfile -t upstream_godebug < <(portcullis::upstream_godebug "${gomod}")
staging_modules=$(portcullis::staging_modules "${gomod}")

# replace_staging MODFLAGS... replaces every staging module with its published version.
replace_staging() {
  local args
  mapfile -t args < <(portcullis::staging_replaces "${gomod}" "${kube_version}")
  go mod edit "$@" "${args[@]}"
}

# upstream_settings MODFLAGS... gives a go.mod upstream's go line and godebug settings.
upstream_settings() {
  local args=(-go="${upstream_go}") setting
  for setting in $(go mod edit -json "$@" | sed -n '/"GoDebug"/,/\]/s/^[[:space:]]*"Key": "\(.*\)",$/\1/p'); do
    args+=(-dropgodebug="${setting}")
  done
  for setting in "${upstream_godebug[@]}"; do
    args+=(-godebug="${setting}")
  done
  go mod edit "$@" "${args[@]}"
}

# An older minor's pins start from nothing but Kubernetes and our staging API module: tidy adds
# what our packages import, at the versions upstream's graph selects. The newest minor's go.mod
# keeps its own requirements and tools (the code generators), each checked against upstream's
# graph by the binary's.
if [[ ${minor_dir} != . ]]; then
  toolchain=${GOTOOLCHAIN}
  {
    echo "module $(go mod edit -json go.mod | sed -n 's/^[[:space:]]*"Path": "\(.*\)",\{0,1\}$/\1/p' | head -1)"
    echo
    echo "go ${upstream_go}"
    echo
    echo "toolchain ${toolchain}"
  } >"${modfile}"
  : >"${minor_dir}/go.sum"
else
  for old in $(go mod edit -json go.mod | sed -n '/"Replace"/,$s#^[[:space:]]*"Path": "\(k8s\.io/[^"]*\)",\{0,1\}$#\1#p' | sort -u); do
    go mod edit -dropreplace="${old}" 2>/dev/null || true
  done
fi
upstream_settings "${modflags[@]}"
go mod edit "${modflags[@]}" -require="k8s.io/kubernetes@${kube_version}" \
  -require=github.com/portcullis-k8s/api@v0.0.0 \
  -replace=github.com/portcullis-k8s/api=./staging/src/github.com/portcullis-k8s/api
replace_staging "${modflags[@]}"
for module in api apimachinery apiserver client-go component-base; do
  go mod edit "${modflags[@]}" -require="k8s.io/${module}@${staging_version}"
done
# tidy reads the files of every build tag: for an older minor, the newest minor's files import
# packages its staging modules lack, which -e lets pass (building with the minor's tag,
# make build KUBE_MINOR=..., checks what the minor's files need).
if [[ ${minor_dir} == . ]]; then
  go mod tidy
else
  go mod tidy -e "${modflags[@]}"
fi
# tidy -e drops a requirement the proxy refuses, and writes pins that cannot build: the
# binary's packages must all resolve (-deps loads them from the module cache, fetching what is
# missing), and any that does not fails the bump.
tags=()
if [[ ${minor_dir} != . ]]; then
  tags=(-tags="kube${minor}")
fi
must_resolve() {
  local out
  if ! out=$(go list -deps "$@" 2>&1 >/dev/null) || [[ -n ${out} ]]; then
    echo "error: with ${kube_version}, go list -deps $* does not resolve (a module the proxy does not serve whole?):" >&2
    head -n 5 <<<"${out}" >&2
    exit 1
  fi
}
must_resolve "${modflags[@]}" "${tags[@]}" ./cmd/kube-apiserver

# releases/1.N/upstream: stock's module. It requires k8s.io/kubernetes alone, with upstream's
# replaces, go line and godebug settings, so every module resolves as in upstream's own build.
upstream_dir=$(portcullis::upstream_module_dir "${minor}")
mkdir -p "${upstream_dir}"
{
  echo "// Stock Kubernetes ${kube_version}, built from upstream's own module graph: written by"
  echo "// hack/update-kube-version.sh; make stock, kube-controller-manager, kubeadm and kubectl"
  echo "// build its tools."
  echo "module github.com/portcullis-k8s/portcullis/releases/${minor}/upstream"
  echo
  echo "go ${upstream_go}"
  echo
  echo "toolchain ${GOTOOLCHAIN}"
  echo
  echo "require k8s.io/kubernetes ${kube_version}"
  echo
  echo "tool ("
  for tool in $(portcullis::upstream_tools); do
    echo "	${tool}"
  done
  echo ")"
} >"${upstream_dir}/go.mod"
: >"${upstream_dir}/go.sum"
(
  cd "${upstream_dir}"
  upstream_settings
  replace_staging
  # The binaries need all they import, and must resolve.
  portcullis::tidy_upstream_module "${kube_version}"
  # shellcheck disable=SC2046 # one package each
  must_resolve $(portcullis::upstream_tools)
)

# releases/1.N/etcd: the etcd server kubeadm of that version deploys (its DefaultEtcdVersion).
etcd_version=$(portcullis::kubeadm_etcd_version "${kube_version}")
etcd_dir=$(portcullis::etcd_module_dir "${minor}")
mkdir -p "${etcd_dir}"
etcd_gomod=$(portcullis::download "go.etcd.io/etcd/server/v3@v${etcd_version}" GoMod)
{
  echo "// etcd ${etcd_version}, the version kubeadm ${kube_version} deploys: written by"
  echo "// hack/update-kube-version.sh; make etcd builds its tool."
  echo "module github.com/portcullis-k8s/portcullis/releases/${minor}/etcd"
  echo
  echo "go $(sed -n 's/^go //p' "${etcd_gomod}")"
  echo
  echo "toolchain ${GOTOOLCHAIN}"
  echo
  echo "require go.etcd.io/etcd/server/v3 v${etcd_version}"
  echo
  echo "tool go.etcd.io/etcd/server/v3"
} >"${etcd_dir}/go.mod"
: >"${etcd_dir}/go.sum"
(cd "${etcd_dir}" && go mod tidy && must_resolve go.etcd.io/etcd/server/v3)

# Our staging API module builds on the oldest minor's API types, so that it raises no module in
# any minor's graph: when the oldest minor moves, it moves, and every other minor is tidied again
# (their Kubernetes pins unchanged).
if [[ ${minor} == "$(portcullis::minors | head -n 1)" ]]; then
  (
    cd staging/src/github.com/portcullis-k8s/api
    go mod edit -go="${upstream_go}" -require="k8s.io/api@${staging_version}" -require="k8s.io/apimachinery@${staging_version}"
    go mod tidy
  )
  staging_changed=false
  if ! git diff --quiet -- staging/src/github.com/portcullis-k8s/api/go.mod staging/src/github.com/portcullis-k8s/api/go.sum; then
    staging_changed=true
  fi
  for other in $(portcullis::minors) $(portcullis::preview); do
    [[ ${other} == "${minor}" ]] && continue
    other_dir=$(portcullis::minor_dir "${other}")
    if [[ ${other_dir} == . ]]; then
      GOTOOLCHAIN=$(portcullis::toolchain "${other}") go mod tidy
    else
      GOTOOLCHAIN=$(portcullis::toolchain "${other}") go mod tidy -e -modfile="${other_dir}/go.mod"
    fi
    # Its pins or the staging module it links changed: so do the bytes it ships
    # (hack/verify-kube-version.sh counts both), and a release already cut is followed by the
    # next.
    if { ${staging_changed} || ! git diff --quiet -- "${other_dir}/go.mod" "${other_dir}/go.sum"; } &&
      [[ ${other} != "$(portcullis::preview)" ]]; then
      portcullis::raise_release "${other}"
    fi
  done
fi

# A new Kubernetes release is a new Portcullis release, the first on it; the deploy kit names
# the newest minor's release (the patch's image tag, the systemd install path, the Kubernetes
# release its comments describe).
old_version=$(portcullis::version "${minor}" 2>/dev/null || true)
new_version="${kube_version}+portcullis.1"
if [[ -z ${old_version} ]] && ! ${preview}; then
  echo "error: ${minor_dir}/VERSION is missing: a supported minor names its release there (docs/registry.md, \"Adding a minor\": copy the previous one first)" >&2
  exit 1
fi
if ${preview}; then
  # The preview lane is never released: its VERSION names the pre-release it builds, counter 0.
  new_version="${kube_version}+portcullis.0"
  echo "${new_version}" >"${minor_dir}/VERSION"
elif [[ ${old_version} != v${minor}.* ]]; then
  # The minor's first release (a preview promoted to the default build): a line of its own.
  echo "${new_version}" >"${minor_dir}/VERSION"
  if [[ ${minor_dir} == . ]]; then
    portcullis::release_renames "${old_version}" "${new_version}"
    mapfile -t kit < <(portcullis::deploy_kit)
    sed -i "${release_renames[@]}" "${kit[@]}" docs/operating.md docs/release.md
  fi
  echo "CHANGELOG.md, README.md, docs/compatibility.md and pkg/releases/releases.go: add ${minor}'s first release, ${new_version} (docs/registry.md, \"Adding a minor\")" >&2
elif [[ ${old_version%%+*} != "${kube_version}" ]]; then
  portcullis::name_release "${minor}" "${new_version}"
fi

echo "${modfile} now requires k8s.io/kubernetes ${kube_version} with $(wc -w <<<"${staging_modules}") staging modules at ${staging_version};"
echo "${upstream_dir} builds stock ${kube_version} from upstream's graph; ${etcd_dir} builds etcd ${etcd_version}; ${minor_dir}/VERSION is ${new_version}."
echo "Then: make test-minor KUBE_MINOR=${minor} (make test for the newest minor): TestModuleGraphIsUpstreams names every module the"
echo "binary links at another version than upstream's graph (docs/compatibility.md lists the reasoned ones); the pinned lists in"
echo "pkg/admission/testdata/${minor}; and CHANGELOG.md's section: what changed upstream that matters here."
# The profile names upstream's functions: after a bump, the ones that moved or changed no
# longer match and the build silently optimizes less. A fresh profile restores it.
if [[ ${minor_dir} == . ]]; then
  echo "Then rebuild and regenerate the PGO profile: make pgo-profile (writes cmd/kube-apiserver/default.pgo; commit it)."
fi
