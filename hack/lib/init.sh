#!/usr/bin/env bash
# Shared helpers for hack/ scripts. Source it; it sets PORTCULLIS_ROOT and strict mode.
set -o errexit -o nounset -o pipefail

PORTCULLIS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PORTCULLIS_ROOT

# The supported Kubernetes minors, oldest first (releases/minors); the newest is the default
# build, pinned by go.mod. PORTCULLIS_KUBE_MINOR (the Makefile's KUBE_MINOR) picks another.
portcullis::minors() {
  cat "${PORTCULLIS_ROOT}/releases/minors"
}

portcullis::default_minor() {
  portcullis::minors | tail -n 1
}

# portcullis::preview prints the next minor's pre-release lane (releases/preview), if any:
# built and tested like an older minor, never released (docs/registry.md, "Adding a minor").
portcullis::preview() {
  cat "${PORTCULLIS_ROOT}/releases/preview" 2>/dev/null || true
}

portcullis::kube_minor() {
  local minor=${PORTCULLIS_KUBE_MINOR:-$(portcullis::default_minor)}
  if ! { portcullis::minors; portcullis::preview; } | grep -qx "${minor}"; then
    echo "error: Kubernetes minor ${minor} is not supported (releases/minors: $(portcullis::minors | tr '\n' ' ')) nor the preview (releases/preview: $(portcullis::preview))" >&2
    return 1
  fi
  echo "${minor}"
}

# portcullis::minor_dir [MINOR] prints the directory holding a minor's go.mod and VERSION,
# relative to the repository: "." for the default minor, releases/<minor> for the others.
portcullis::minor_dir() {
  local minor=${1:-$(portcullis::kube_minor)}
  if [[ ${minor} == "$(portcullis::default_minor)" ]]; then
    echo .
  else
    echo "releases/${minor}"
  fi
}

# portcullis::toolchain [MINOR] prints the Go toolchain that minor builds with: its go.mod's
# toolchain line (docs/compatibility.md, "Go toolchain": each minor's is chosen against
# upstream's .go-version for its patch).
portcullis::toolchain() {
  sed -n 's/^toolchain //p' "${PORTCULLIS_ROOT}/$(portcullis::minor_dir "$@")/go.mod"
}

# portcullis::upstream_module_dir [MINOR] prints releases/<minor>/upstream: the module that
# builds that minor's stock binaries (kube-apiserver, kube-controller-manager, kubeadm, kubectl)
# from upstream's own module graph, requiring k8s.io/kubernetes alone.
portcullis::upstream_module_dir() {
  echo "releases/${1:-$(portcullis::kube_minor)}/upstream"
}

# portcullis::etcd_module_dir [MINOR] prints releases/<minor>/etcd: the module that builds the
# etcd server that minor's kubeadm deploys.
portcullis::etcd_module_dir() {
  echo "releases/${1:-$(portcullis::kube_minor)}/etcd"
}

# portcullis::gomod_kube_version [MINOR] prints the k8s.io/kubernetes version that minor's
# go.mod requires.
portcullis::gomod_kube_version() {
  (cd "${PORTCULLIS_ROOT}" && go mod edit -json "$(portcullis::minor_dir "$@")/go.mod") |
    sed -n '/"Path": "k8s.io\/kubernetes"/{n;s/^[[:space:]]*"Version": "\(.*\)"$/\1/p;q}'
}

# portcullis::version [MINOR] prints the Portcullis release of that minor (its VERSION).
portcullis::version() {
  tr -d '[:space:]' <"${PORTCULLIS_ROOT}/$(portcullis::minor_dir "$@")/VERSION"
}

# portcullis::next_release VERSION prints the Portcullis release after VERSION on the same
# Kubernetes release: v1.N.P+portcullis.M+1.
portcullis::next_release() {
  local version=$1
  if [[ ! ${version} =~ ^(v[^+]+\+portcullis\.)([0-9]+)$ ]]; then
    echo "error: ${version:-<empty>} is not a release of the form v1.N.P+portcullis.M" >&2
    return 1
  fi
  echo "${BASH_REMATCH[1]}$((BASH_REMATCH[2] + 1))"
}

# portcullis::upstream_gomod VERSION prints the path of upstream's go.mod for that release,
# fetched through the module proxy.
portcullis::upstream_gomod() {
  portcullis::download "k8s.io/kubernetes@$1" GoMod
}

# portcullis::download MODULE@VERSION FIELD downloads a module through the module proxy and
# prints one field of go mod download -json (Dir, GoMod, Zip), asked from outside any module so
# that no go.mod of the repository (its go line, the caller's -modfile) is read.
portcullis::download() {
  local out
  # +auto: a module whose go line is newer than the toolchain in use (a preview's) is still
  # fetched, the go command switching to a toolchain that reads it.
  if ! out=$(cd / && GOWORK=off GOFLAGS= GOTOOLCHAIN="${GOTOOLCHAIN%%+*}+auto" go mod download -json "$1" 2>&1); then
    echo "error: the module proxy does not give $1 (asked by exact version): $(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"${out}" | head -n 1)" >&2
    return 1
  fi
  sed -n "s/^[[:space:]]*\"$2\": \"\(.*\)\",\$/\1/p" <<<"${out}"
}

# portcullis::staging_modules GOMOD prints every module upstream replaces with its own
# staging directory: those are published separately as v0.<minor>.<patch>.
portcullis::staging_modules() {
  sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#\1#p' "$1" | sort -u
}

# portcullis::staging_replaces GOMOD v1.X.Y prints, one a line, the go mod edit arguments that
# replace every staging module upstream's GOMOD names with its published v0.X.Y, as upstream's
# release of v1.X.Y is built (releases/1.N/upstream, the minors' go.mod, the probe's module).
portcullis::staging_replaces() {
  local module
  for module in $(portcullis::staging_modules "$1"); do
    echo "-replace=${module}=${module}@$(portcullis::staging_version "$2")"
  done
}

# portcullis::staging_version v1.X.Y prints v0.X.Y.
portcullis::staging_version() {
  echo "v0.${1#v1.}"
}

# portcullis::deploy_kit lists the deploy kit's files: build/deploy's tracked files but the Go
# package that embeds the PodSecurityPolicy examples. They name the newest minor's release.
portcullis::deploy_kit() {
  (cd "${PORTCULLIS_ROOT}" && git ls-files -- build/deploy | grep -v '\.go$')
}

# portcullis::write_deploy_kit VERSION DIR writes the deploy kit naming release VERSION into
# DIR (DIR/static-pod/..., as build/deploy/ has them): build/deploy names the newest minor's
# release (what hack/update-kube-version.sh renames it to), so an older minor's operator
# installs that release's copy as it is.
portcullis::write_deploy_kit() {
  local version=$1 dir=$2 file to listing files
  portcullis::release_renames "$(portcullis::version "$(portcullis::default_minor)")" "${version}"
  # Listed first: a failure of the listing is the caller's (errexit), not a shorter kit.
  listing=$(portcullis::deploy_kit)
  mapfile -t files <<<"${listing}"
  for file in "${files[@]}"; do
    to=${file#build/deploy/}
    mkdir -p "${dir}/$(dirname "${to}")"
    sed "${release_renames[@]}" "${PORTCULLIS_ROOT}/${file}" >"${dir}/${to}"
  done
}

# portcullis::release_renames FROM TO sets the array release_renames to sed expressions that
# rename release FROM (v1.N.P+portcullis.K) to release TO wherever a file names it: the
# release, its image tag (kubeadm's: "+" becomes "_"), then its Kubernetes release and that
# release's staging modules (v1.N.P, v0.N.P). hack/update-kube-version.sh renames the deploy
# kit with them, and build/release.sh writes each release's copy.
portcullis::release_renames() {
  local from=$1 to=$2
  local from_kube=${from%%+*} to_kube=${to%%+*}
  release_renames=()
  local pair
  for pair in "${from} ${to}" "${from//+/_} ${to//+/_}" "${from_kube} ${to_kube}" \
    "$(portcullis::staging_version "${from_kube}") $(portcullis::staging_version "${to_kube}")"; do
    set -- ${pair}
    # Only a whole version: never the start of a longer one (v1.37.2 in v1.37.20), so that one
    # expression does not rename again what an earlier one wrote.
    release_renames+=(-e "s/$(portcullis::sed_literal "$1")\([^0-9]\)/$2\1/g" -e "s/$(portcullis::sed_literal "$1")\$/$2/")
  done
}

# portcullis::tree_fingerprint identifies the sources a build or a test run sees: the commit,
# tracked changes and untracked files (a digest of them).
portcullis::tree_fingerprint() {
  {
    git -C "${PORTCULLIS_ROOT}" rev-parse HEAD
    git -C "${PORTCULLIS_ROOT}" diff HEAD --binary
    (cd "${PORTCULLIS_ROOT}" && git ls-files --others --exclude-standard -z | xargs -0 -r sha256sum --)
  } 2>/dev/null | sha256sum
}

# portcullis::release_inputs PLATFORM... names what a release built now would be made of: the
# sources (portcullis::tree_fingerprint), the platforms, SOURCE_DATE_EPOCH, the Go toolchain
# and the go env settings that change a build. make test-release records it beside its
# release; build/verify-release.sh --against takes that release only if it still holds.
portcullis::release_inputs() {
  echo "sources $(portcullis::tree_fingerprint)"
  echo "platforms $*"
  echo "SOURCE_DATE_EPOCH ${SOURCE_DATE_EPOCH:-}"
  (cd "${PORTCULLIS_ROOT}" && "${GO:-go}" version && "${GO:-go}" env GOFLAGS GOAMD64 GOARM64 GOEXPERIMENT CGO_ENABLED)
}

# portcullis::run_id names the sources a test run sees: the commit, and with uncommitted changes
# or untracked files, "+dirty." and the start of their fingerprint, so that two different
# working trees never share an id.
portcullis::run_id() {
  local commit
  commit=$(git -C "${PORTCULLIS_ROOT}" rev-parse HEAD 2>/dev/null)
  if git -C "${PORTCULLIS_ROOT}" diff --quiet HEAD 2>/dev/null &&
    [[ -z $(cd "${PORTCULLIS_ROOT}" && git ls-files --others --exclude-standard) ]]; then
    echo "${commit}"
  else
    echo "${commit}+dirty.$(portcullis::tree_fingerprint | cut -c1-12)"
  fi
}

# portcullis::minor_unit_packages ALSO... -- PACKAGE... prints, of the PACKAGEs, those whose
# unit tests an older minor runs (make test-minor): the ones whose test binary links a package
# with a file of a minor's build tag (kube1.N, in its directory, tracked or not), and the ALSO
# ones, each of which must be among the PACKAGEs. It fails when go list does, or when no
# PACKAGE links such a file. GOFLAGS (the minor's -modfile and -tags) and GO are the caller's.
portcullis::minor_unit_packages() {
  local go=${GO:-go} also=() import dir pkg deps listing found=0
  while [[ $# -gt 0 && $1 != -- ]]; do
    also+=("$1")
    shift
  done
  shift
  local -A tagged=() wanted=() given=()
  for pkg in "$@"; do
    given[${pkg}]=1
  done
  for pkg in "${also[@]}"; do
    if [[ -z ${given[${pkg}]:-} ]]; then
      echo "portcullis::minor_unit_packages: ${pkg} is not among the packages given" >&2
      return 1
    fi
    wanted[${pkg}]=1
  done
  listing=$(cd "${PORTCULLIS_ROOT}" && "${go}" list -f '{{.ImportPath}} {{.Dir}}' ./...) || return 1
  while read -r import dir; do
    if grep -qE '^//go:build .*kube1\.[0-9]+' "${dir}"/*.go 2>/dev/null; then
      tagged[${import}]=1
    fi
  done <<<"${listing}"
  # Each test binary (p.test) with what it links.
  listing=$(cd "${PORTCULLIS_ROOT}" && "${go}" list -test -f '{{if and (not .ForTest) (eq .Name "main")}}{{.ImportPath}} {{join .Deps " "}}{{end}}' "$@") || return 1
  while read -r pkg deps; do
    for import in ${pkg%.test} ${deps}; do
      if [[ -n ${tagged[${import}]:-} ]]; then
        wanted[${pkg%.test}]=1
        found=$((found + 1))
        break
      fi
    done
  done < <(grep '\.test ' <<<"${listing}")
  if [[ ${found} -eq 0 ]]; then
    echo "portcullis::minor_unit_packages: no package's test binary links a file of a minor's build tag (kube1.N)" >&2
    return 1
  fi
  for pkg in "$@"; do
    if [[ -n ${wanted[${pkg}]:-} ]]; then
      echo "${pkg}"
    fi
  done
}

# portcullis::kill_tree PID sends SIGTERM to PID and every process below it, children first
# found, then the parent, so that what PID started cannot outlive it: the test servers run in
# process groups of their own, which a signal to the stage's group would miss.
portcullis::kill_tree() {
  local child
  kill -STOP "$1" 2>/dev/null || return 0
  for child in $(pgrep -P "$1"); do
    portcullis::kill_tree "${child}"
  done
  kill -TERM "$1" 2>/dev/null
  kill -CONT "$1" 2>/dev/null
  return 0
}

# portcullis::minutes SECONDS prints them as minutes with one decimal (738 -> 12.3).
portcullis::minutes() {
  printf '%d.%d' $(($1 / 60)) $(($1 % 60 * 10 / 60))
}

# portcullis::stage_table LOG [markdown [SAMPLES]] prints hack/stage.sh's log as a table of
# minutes, in the order the stages started, a stage before those nested in it
# ("make test/unit"), as plain text or a Markdown table. Stages under background/ ran beside
# the others. SAMPLES (hack/measure-ci.sh's) adds a column: the cores busy on average while
# the stage ran, the whole machine's, from lines of "Unix time in microseconds, busy jiffies,
# all jiffies" (/proc/stat's first line, sampled every few seconds; "-" for a stage shorter
# than two samples).
portcullis::stage_table() {
  local log=$1 format=${2:-text} samples=${3:-} name seconds rc start result cores
  if [[ ${format} == markdown ]]; then
    if [[ -n ${samples} ]]; then
      echo "| stage | minutes | cores busy |"
      echo "|---|---|---|"
    else
      echo "| stage | minutes |"
      echo "|---|---|"
    fi
  fi
  LC_ALL=C sort -t $'\t' -k4,4n -k1,1 "${log}" | while IFS=$'\t' read -r name seconds rc start; do
    result=""
    if [[ ${rc} -ne 0 ]]; then
      result=" (failed, exit ${rc})"
    fi
    if [[ ${format} == markdown ]]; then
      cores=""
      if [[ -n ${samples} ]]; then
        cores=" $(portcullis::cores_busy "${samples}" "${start}" $((start + seconds * 1000000))) |"
      fi
      echo "| ${name//\// / } | $(portcullis::minutes "${seconds}")${result} |${cores}"
    else
      printf '%-48s %6s%s\n' "${name}" "$(portcullis::minutes "${seconds}")" "${result}"
    fi
  done
}

# portcullis::cores_busy SAMPLES FROM TO prints the cores busy on average between the first
# sample at or after FROM and the last at or before TO (Unix microseconds), with one decimal,
# or "-" when fewer than two samples fall between them. SAMPLES: see portcullis::stage_table.
portcullis::cores_busy() {
  # The CPUs /proc/stat adds up (nproc counts those this process may use, fewer in a cpuset).
  awk -v from="$2" -v to="$3" -v cpus="$(grep -c '^cpu[0-9]' /proc/stat)" '
    $1 >= from && $1 <= to { if (first == "") { first = $1; busy0 = $2; all0 = $3 } busy1 = $2; all1 = $3; last = $1 }
    END {
      if (first == "" || last == first || all1 == all0) { print "-"; exit }
      printf "%.1f\n", (busy1 - busy0) / (all1 - all0) * cpus
    }' "$1"
}

# portcullis::sed_literal S prints a version string as a basic regular expression matching it
# (its dots escaped).
portcullis::sed_literal() {
  printf '%s' "${1//./\\.}"
}

# portcullis::api_packages lists the packages of the staging API module that carry
# generated deepcopy code.
portcullis::api_packages() {
  echo github.com/portcullis-k8s/api/settings/v1alpha1
  echo github.com/portcullis-k8s/api/policy/v1beta1
  echo github.com/portcullis-k8s/api/admission/v1alpha1
  echo github.com/portcullis-k8s/api/admissionregistration/v1alpha1
}

# portcullis::internal_packages lists the main module's internal API packages (hub types)
# that carry generated deepcopy code.
portcullis::internal_packages() {
  echo github.com/portcullis-k8s/portcullis/pkg/apis/policy
  echo github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration
  echo github.com/portcullis-k8s/portcullis/pkg/apis/admission
}

# portcullis::conversion_packages lists the main module's versioned API packages that carry
# generated conversion and defaulting code (conversion-gen, defaulter-gen).
portcullis::conversion_packages() {
  echo github.com/portcullis-k8s/portcullis/pkg/apis/policy/v1beta1
  echo github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/v1alpha1
  echo github.com/portcullis-k8s/portcullis/pkg/apis/admission/v1alpha1
}

# portcullis::openapi_packages lists the staging packages whose OpenAPI definitions are
# generated into pkg/generated/openapi (and whose OpenAPIModelName methods are generated
# beside their types).
portcullis::openapi_packages() {
  echo github.com/portcullis-k8s/api/policy/v1beta1
  echo github.com/portcullis-k8s/api/admissionregistration/v1alpha1
}

# portcullis::openapi_readonly_packages lists the upstream packages our API types refer to.
# openapi-gen reads them (as inputs, so it learns their OpenAPI model names) but writes no
# file into them; their definitions are generated too, identical to upstream's.
portcullis::openapi_readonly_packages() {
  echo k8s.io/apimachinery/pkg/apis/meta/v1
  echo k8s.io/apimachinery/pkg/api/resource
  echo k8s.io/apimachinery/pkg/runtime
  echo k8s.io/apimachinery/pkg/util/intstr
  echo k8s.io/apimachinery/pkg/version
  echo k8s.io/api/core/v1
}

# portcullis::generated_paths lists every directory (relative to PORTCULLIS_ROOT) that
# hack/update-codegen.sh writes into; hack/verify-codegen.sh compares them.
portcullis::generated_paths() {
  echo staging/src/github.com/portcullis-k8s/api
  echo pkg/apis
  echo pkg/generated
  echo hack/api-rules
}

# The Go toolchain is the minor's go.mod toolchain line (PORTCULLIS_KUBE_MINOR, the newest by
# default), as the Makefile exports it: machines come with GOTOOLCHAIN=local, which ignores
# the line.
GOTOOLCHAIN=$(portcullis::toolchain 2>/dev/null || sed -n 's/^toolchain //p' "${PORTCULLIS_ROOT}/go.mod")
export GOTOOLCHAIN

# portcullis::upstream_godebug GOMOD prints upstream's godebug settings (key=value, one a line)
# from its go.mod, in either of go.mod's forms (a line, or a block).
portcullis::upstream_godebug() {
  sed -n -e 's/^godebug \([^(][^[:space:]]*\)$/\1/p' -e '/^godebug (/,/^)/s/^[[:space:]]\+\([^[:space:]]*=[^[:space:]]*\)$/\1/p' "$1"
}

# portcullis::upstream_tools prints the packages of upstream's that the builds and tests run
# as stock, each built from releases/<minor>/upstream (the kubelet and kube-scheduler for the
# real node, test/node; agnhost, upstream's e2e test image program, for its pods; ginkgo's CLI,
# which runs upstream's e2e suite for make conformance).
portcullis::upstream_tools() {
  printf '%s\n' k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/test/images/agnhost github.com/onsi/ginkgo/v2/ginkgo
}

# portcullis::upstream_test_suites prints the packages of upstream's whose tests make
# conformance builds (go test -c) from releases/<minor>/upstream.
portcullis::upstream_test_suites() {
  echo k8s.io/kubernetes/test/e2e
}

# portcullis::tidy_upstream_module v1.N.P tidies the upstream module in the current directory
# as hack/update-kube-version.sh writes it, and hack/verify-kube-version.sh checks it: tidy
# keeps what the module's tools need, not what upstream's test suites do, so the suites'
# requirements are added after it (go get -t). -e: what only the tests of upstream's packages
# import may be missing from the proxy (a pre-release's test-only staging modules are); the
# binaries need none of it. A suite that does not resolve is only warned about: make
# conformance alone needs it.
portcullis::tidy_upstream_module() {
  local suite
  go mod tidy -e
  for suite in $(portcullis::upstream_test_suites); do
    go get -t "${suite}@$1" ||
      echo "warning: $1's ${suite} does not resolve: make conformance cannot build it" >&2
  done
}

# portcullis::kubeadm_etcd_version v1.N.P prints the etcd version kubeadm of that release deploys
# (its DefaultEtcdVersion, without the image's "-0").
portcullis::kubeadm_etcd_version() {
  local dir
  dir=$(portcullis::download "k8s.io/kubernetes@$1" Dir)
  sed -n 's/^[[:space:]]*DefaultEtcdVersion = "\([0-9.]*\)-[0-9]*"$/\1/p' "${dir}/cmd/kubeadm/app/constants/constants.go"
}

# portcullis::changelog_bump FROM TO renames release FROM to TO in CHANGELOG.md when FROM is
# still unreleased (its heading says so): the heading and the Kubernetes release its section
# describes. A released FROM keeps its section; TO gets a new one, above it.
portcullis::changelog_bump() {
  local from=$1 to=$2 changelog=${PORTCULLIS_ROOT}/CHANGELOG.md
  local from_kube=${from%%+*} to_kube=${to%%+*}
  if [[ $(portcullis::changelog_status "${from}") == unreleased ]]; then
    portcullis::release_renames "${from}" "${to}"
    # Within the unreleased section that names FROM only.
    awk -v from="${from}" '
      /^## / { inside = (index($0, from) > 0 && $0 ~ /unreleased/) }
      { print (inside ? "@@" : "") $0 }
    ' "${changelog}" >"${changelog}.tmp"
    local exprs=() expr
    for expr in "${release_renames[@]}"; do
      if [[ ${expr} == -e ]]; then exprs+=(-e); else exprs+=("/^@@/${expr}"); fi
    done
    sed -i "${exprs[@]}" "${changelog}.tmp"
    sed -i 's/^@@//' "${changelog}.tmp"
    mv "${changelog}.tmp" "${changelog}"
  else
    awk -v to="${to}" -v from_kube="${from_kube}" -v to_kube="${to_kube}" '
      !done && /^## / {
        print "## " to " — unreleased"
        print ""
        print "Built on Kubernetes **" to_kube "** (was " from_kube "): hack/update-kube-version.sh " to_kube "."
        print ""
        done = 1
      }
      { print }
    ' "${changelog}" >"${changelog}.tmp"
    mv "${changelog}.tmp" "${changelog}"
  fi
}

# portcullis::changelog_status VERSION prints "unreleased" when CHANGELOG.md's section heading
# naming VERSION says so, "released" when a heading names it otherwise, and "missing" when none
# does.
portcullis::changelog_status() {
  local headings
  # Whole words only: v1.37.2+portcullis.1 is not v1.37.2+portcullis.10.
  headings=$(grep '^## ' "${PORTCULLIS_ROOT}/CHANGELOG.md" | while read -r line; do
    tr -s ' \t,;()' '\n' <<<"${line}" | grep -qxF -- "$1" && echo "${line}"
  done || true)
  if [[ -z ${headings} ]]; then
    echo missing
  elif grep -q -- '— unreleased' <<<"${headings}"; then
    echo unreleased
  else
    echo released
  fi
}

# portcullis::name_release MINOR NEW names MINOR's next release NEW (v1.N.P+portcullis.K) where
# the repository names that minor's release: its VERSION; CHANGELOG.md (the unreleased section
# renamed, or a new section above a cut one); README.md's and docs/compatibility.md's tables;
# the minor's line in pkg/releases (an unreleased release renamed, a cut one followed by NEW,
# carrying every addition); for the newest minor, the deploy kit.
portcullis::name_release() {
  local minor=$1 new=$2 minor_dir old unreleased=false
  minor_dir=$(portcullis::minor_dir "${minor}")
  old=$(portcullis::version "${minor}")
  [[ ${old} == "${new}" ]] && return 0
  if [[ $(portcullis::changelog_status "${old}") == unreleased ]]; then
    unreleased=true
  fi
  echo "${new}" >"${PORTCULLIS_ROOT}/${minor_dir}/VERSION"
  portcullis::changelog_bump "${old}" "${new}"
  portcullis::release_renames "${old}" "${new}"
  (cd "${PORTCULLIS_ROOT}" && sed -i "${release_renames[@]}" README.md docs/compatibility.md)
  local releases_go=${PORTCULLIS_ROOT}/pkg/releases/releases.go
  if ${unreleased}; then
    sed -i "${release_renames[@]}" "${releases_go}"
  else
    local last
    last=$(sed -n 's/^var All = \[\]string{.*, \([A-Za-z0-9]*\)}$/\1/p' "${releases_go}")
    sed -i "s|^\(\t\"${minor//./\\.}\": {.*\)}},\$|\1}, {Version: \"${new}\", Carries: ${last}}},|" "${releases_go}"
    grep -qF "\"${new}\"" "${releases_go}" || {
      echo "pkg/releases/releases.go: could not add ${new} to ${minor}'s line: add it after ${old}" >&2
      return 1
    }
  fi
  if [[ ${minor_dir} == . ]]; then
    # The deploy kit, and the operator's and the release's guides, whose commands and outputs
    # name the newest minor's release (the docs' tests run them).
    local kit
    mapfile -t kit < <(portcullis::deploy_kit)
    (cd "${PORTCULLIS_ROOT}" && sed -i "${release_renames[@]}" "${kit[@]}" docs/operating.md docs/release.md)
  fi
}

# portcullis::raise_release MINOR raises MINOR's release counter when its VERSION names a
# release already cut (its shipped bytes changed since: make verify says so), and does nothing
# while it is unreleased (the change ships in it).
portcullis::raise_release() {
  local minor=$1 version
  version=$(portcullis::version "${minor}")
  if [[ $(portcullis::changelog_status "${version}") == unreleased ]]; then
    echo "${minor}: ${version} is unreleased; the change ships in it"
    return 0
  fi
  portcullis::name_release "${minor}" "${version%.*}.$((${version##*.} + 1))"
  echo "${minor}: $(portcullis::version "${minor}") follows ${version}"
}

# portcullis::go_patch_difference goX.Y.A goX.Y.B says, for docs/compatibility.md's toolchain
# table, how many patch releases B is past A.
portcullis::go_patch_difference() {
  local n=$((${2##*.} - ${1##*.})) words=(none one two three four five six seven eight nine ten)
  case ${n} in
  0) echo "the same release" ;;
  1) echo "one patch release of standard-library fixes" ;;
  *) echo "${words[n]:-${n}} patch releases of standard-library fixes" ;;
  esac
}

# portcullis::newest_go_patch X.Y.Z prints goX.Y.P, the newest patch of Go X.Y from Z on that
# the module proxy serves (asked by exact version: its list omits some): the toolchain a minor
# whose upstream declares goX.Y.Z builds with (docs/compatibility.md, "Go toolchain").
portcullis::newest_go_patch() {
  local go_minor=${1%.*} patch=${1##*.} newest="" platform
  platform=$(go env GOHOSTOS)-$(go env GOHOSTARCH)
  for ((; patch <= ${1##*.} + 20; patch++)); do
    # Every patch of the window is asked: the proxy serves some with gaps between them.
    if (cd / && GOWORK=off GOFLAGS= GOTOOLCHAIN="${GOTOOLCHAIN%%+*}+auto" go list -m -json "golang.org/toolchain@v0.0.1-go${go_minor}.${patch}.${platform}" >/dev/null 2>&1); then
      newest=go${go_minor}.${patch}
    fi
  done
  if [[ -z ${newest} ]]; then
    echo "error: the module proxy serves no toolchain go${go_minor}.P from go$1 on" >&2
    return 1
  fi
  echo "${newest}"
}
