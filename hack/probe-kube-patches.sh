#!/usr/bin/env bash
# Usage: hack/probe-kube-patches.sh
#
# Asks the module proxy, by exact version, for what each supported minor should move to:
# - k8s.io/kubernetes v1.N.(P+1) to v1.N.(P+PROBE_WINDOW) after the minor's pin, and for each
#   one it serves, every package of upstream's binaries (kube-apiserver, kube-controller-manager,
#   kubeadm, kubectl) resolved in a module like releases/1.N/upstream (k8s.io/kubernetes with
#   its staging replaces): each module they need, third-party ones included, downloaded whole;
#   and the etcd server that patch's kubeadm deploys. "Buildable" means
#   hack/update-kube-version.sh will find them all (our packages need no module upstream's
#   graph lacks: TestModuleGraphIsUpstreams);
# - the Go toolchain's next patches (golang.org/toolchain goX.Y.(Z+1)...) after the minor's
#   toolchain line.
# The proxy's version list omits versions it serves, so only an exact question is an answer.
# It fails, printing the command, when a newer patch is served whole and not taken. A version
# the proxy refuses is reported (released upstream or not, it is not served here) and is no
# failure; a proxy that cannot be reached (no route, no name, a time-out, TLS) is reported and
# is no failure either. A proxy that does not serve the pins themselves is broken: that fails.
# .ci/run runs it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

PROBE_WINDOW=${PROBE_WINDOW:-4}
# The proxy alone, asked from outside any module: "direct" would turn the proxy's refusal into
# a fetch from the origin, which this machine cannot reach; no workspace, no private patterns
# that would send a question elsewhere, no flags of the caller's.
proxy=$(go env GOPROXY)
proxy=${proxy%%,*}
proxy=${proxy%%|*}
if [[ -z ${proxy} || ${proxy} == off || ${proxy} == direct ]]; then
  echo "GOPROXY is ${proxy:-empty}: no module proxy to ask; not probed"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

# ask MODULE@VERSION prints served, refused, unreachable or broken on its first line (and the
# go command's words on the next, unless served). Served means downloaded whole.
# +auto: a patch whose go line is newer than the minor's toolchain is fetched with a toolchain
# that reads it.
probe_env=(GOWORK=off GOFLAGS=-mod=mod GOPROXY="${proxy}" GONOPROXY= GOPRIVATE= GONOSUMDB= GOTOOLCHAIN="${GOTOOLCHAIN%%+*}+auto")
ask() {
  local out status=0
  out=$(cd "${work}" && env "${probe_env[@]}" timeout 300 go mod download -json "$1" 2>&1) || status=$?
  if ((status == 0)) && ! grep -q '"Error"' <<<"${out}"; then
    echo served
    return
  fi
  if ((status == 124)); then
    echo unreachable
    echo "no answer in 300 s"
    return
  fi
  out=$(grep -v '^[{}]' <<<"${out}" | grep -m1 -E 'Error|go: ' || head -n 1 <<<"${out}")
  if grep -qE ' (403|404|410) |not found|unknown revision|invalid version' <<<"${out}"; then
    echo refused
  elif grep -qE 'dial tcp|no such host|i/o timeout|connection refused|network is unreachable|TLS handshake|x509:|Client.Timeout|context deadline exceeded' <<<"${out}"; then
    echo unreachable
  else
    echo broken
  fi
  echo "${out}"
}

# resolve_upstream v1.N.P resolves every package of upstream's binaries at that version in a
# module of its own (as releases/1.N/upstream is written: k8s.io/kubernetes, its staging
# modules replaced with their published versions), fetching the modules they need; on failure
# it prints the first error.
resolve_upstream() {
  local dir=${work}/upstream-$1 gomod args=() out
  gomod=$(cd "${work}" && env "${probe_env[@]}" go mod download -json "k8s.io/kubernetes@$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  mkdir -p "${dir}"
  printf 'module probe\n\ngo %s\n' "$(sed -n 's/^go //p' "${gomod}")" >"${dir}/go.mod"
  mapfile -t args < <(portcullis::staging_replaces "${gomod}" "$1")
  args+=(-require="k8s.io/kubernetes@$1")
  # shellcheck disable=SC2046 # one package each
  if ! out=$(cd "${dir}" && env "${probe_env[@]}" go mod edit "${args[@]}" 2>&1 &&
    env "${probe_env[@]}" timeout 900 go list -deps $(portcullis::upstream_tools) 2>&1 >/dev/null); then
    grep -m1 -E ' (403|404|410) |not available|missing go.sum|cannot find module|no required module' <<<"${out}" ||
      grep -v -E '^go: (downloading|finding|.*switching to)' <<<"${out}" | head -n 1
    return 1
  fi
}

status=0
# check_pin MODULE@VERSION: the pins themselves must be served, or the proxy is not the one
# the build uses.
check_pin() {
  mapfile -t answer < <(ask "$1")
  case ${answer[0]} in
  served) return 0 ;;
  unreachable)
    echo "the module proxy (${proxy}) could not be reached asking for $1: ${answer[1]:-}; not probed"
    exit 0
    ;;
  *)
    echo "the module proxy (${proxy}) does not serve $1, which the build pins (${answer[0]}: ${answer[1]:-}): it is not the proxy the build uses" >&2
    exit 1
    ;;
  esac
}

for minor in $(portcullis::minors); do
  modfile=$(portcullis::minor_dir "${minor}")/go.mod
  pinned=$(portcullis::gomod_kube_version "${minor}")
  check_pin "k8s.io/kubernetes@${pinned}"
  patch=${pinned##*.}
  newest_buildable=""
  reached=1
  for ((next = patch + 1; next <= patch + PROBE_WINDOW; next++)); do
    candidate=v${minor}.${next}
    mapfile -t answer < <(ask "k8s.io/kubernetes@${candidate}")
    case ${answer[0]} in
    unreachable)
      echo "${minor}: the module proxy (${proxy}) could not be reached asking for k8s.io/kubernetes@${candidate}: ${answer[1]:-}; not probed"
      reached=0
      break
      ;;
    refused)
      echo "${minor}: k8s.io/kubernetes ${candidate}: not served here (unreleased, or released upstream and not served by this proxy)"
      continue
      ;;
    broken)
      echo "${minor}: asking for k8s.io/kubernetes@${candidate} failed: ${answer[1]:-}" >&2
      status=1
      continue
      ;;
    esac
    missing=()
    if ! resolved=$(resolve_upstream "${candidate}"); then
      missing+=("${resolved}")
    fi
    if ! etcd=$(portcullis::kubeadm_etcd_version "${candidate}") || [[ -z ${etcd} ]]; then
      echo "${minor}: the etcd version kubeadm ${candidate} deploys could not be read (cmd/kubeadm/app/constants: DefaultEtcdVersion)" >&2
      status=1
      continue
    fi
    mapfile -t answer < <(ask "go.etcd.io/etcd/server/v3@v${etcd}")
    [[ ${answer[0]} == served ]] || missing+=("go.etcd.io/etcd/server/v3 v${etcd}, which its kubeadm deploys (${answer[0]})")
    if ((${#missing[@]} > 0)); then
      echo "${minor}: k8s.io/kubernetes ${candidate} is served, but not whole: ${missing[*]}; not buildable here"
      continue
    fi
    echo "${minor}: k8s.io/kubernetes ${candidate}, every module upstream's binaries need and etcd ${etcd} are served: buildable"
    newest_buildable=${candidate}
  done
  if [[ -n ${newest_buildable} ]]; then
    echo "${minor} is pinned to ${pinned}, and ${newest_buildable} is buildable: run hack/update-kube-version.sh ${newest_buildable}" >&2
    status=1
  elif ((reached)); then
    echo "${minor}: ${pinned} is the newest buildable patch the proxy serves (asked up to v${minor}.$((patch + PROBE_WINDOW)))"
  fi
done

# The Go toolchains: a newer patch of a minor's toolchain carries standard-library fixes
# (SECURITY.md). The toolchain of this machine's platform is asked for.
platform=$(go env GOHOSTOS)-$(go env GOHOSTARCH)
for toolchain in $({ for minor in $(portcullis::minors); do portcullis::toolchain "${minor}"; done; } | sort -u); do
  check_pin "golang.org/toolchain@v0.0.1-${toolchain}.${platform}"
  go_patch=${toolchain##*.}
  go_minor=${toolchain%.*}
  newest=""
  for ((next = go_patch + 1; next <= go_patch + PROBE_WINDOW; next++)); do
    mapfile -t answer < <(ask "golang.org/toolchain@v0.0.1-${go_minor}.${next}.${platform}")
    case ${answer[0]} in
    served) newest=${go_minor}.${next} ;;
    unreachable)
      echo "the module proxy could not be reached asking for ${go_minor}.${next}: ${answer[1]:-}; not probed"
      break
      ;;
    broken)
      echo "asking for ${go_minor}.${next} failed: ${answer[1]:-}" >&2
      status=1
      ;;
    esac
  done
  if [[ -n ${newest} ]]; then
    echo "${newest} is served, and the minors on ${toolchain} should move to it: set their go.mod toolchain lines (and releases/<minor>/upstream's and etcd's) to ${newest} (docs/compatibility.md, \"Go toolchain\")" >&2
    status=1
  else
    echo "Go ${toolchain}: no newer patch served (asked up to ${go_minor}.$((go_patch + PROBE_WINDOW)))"
  fi
done
exit "${status}"
