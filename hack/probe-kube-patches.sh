#!/usr/bin/env bash
# Usage: hack/probe-kube-patches.sh
#
# Asks the module proxy, by exact version, for the patches after each supported minor's pin:
# k8s.io/kubernetes v1.N.(P+1) to v1.N.(P+PROBE_WINDOW), and for each one it serves, every
# staging module that minor's build uses at v0.N.(P+k). The proxy's version list omits versions
# it serves, so only an exact question is an answer. It fails, printing the bump command, when
# a newer patch is served whole (buildable) and not taken. A version the proxy refuses is
# reported as released upstream or not, but not served here, and is no failure; a proxy that
# cannot be reached is reported and is no failure either. .ci/run runs it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

PROBE_WINDOW=${PROBE_WINDOW:-4}
# The proxy alone: "direct" would turn the proxy's refusal into a failed fetch from the
# origin, which this machine cannot reach.
proxy=$(go env GOPROXY)
proxy=${proxy%%,*}
proxy=${proxy%%|*}
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

# ask MODULE@VERSION prints served, refused or unreachable (and the go command's words on the
# next line, unless served).
ask() {
  local out
  if out=$(cd "${work}" && GOFLAGS=-mod=mod GOPROXY=${proxy} GONOSUMDB= timeout 120 go list -m -json "$1" 2>&1); then
    echo served
  elif grep -qE ' (403|404|410) |not found|unknown revision|invalid version' <<<"${out}"; then
    echo refused
    head -n 2 <<<"${out}"
  else
    echo unreachable
    head -n 2 <<<"${out}"
  fi
}

status=0
for minor in $(portcullis::minors); do
  modfile=$(portcullis::minor_dir "${minor}")/go.mod
  sumfile=${modfile%.mod}.sum
  pinned=$(portcullis::gomod_kube_version "${minor}")
  patch=${pinned##*.}
  # The staging modules this minor's build uses: replaced in its go.mod and summed in go.sum.
  staging=()
  for module in $(go mod edit -json "${modfile}" | sed -n '/"Replace"/,$s#^[[:space:]]*"Path": "\(k8s\.io/[^"]*\)",\{0,1\}$#\1#p' | sort -u); do
    grep -q "^${module} " "${sumfile}" && staging+=("${module}")
  done
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
    esac
    missing=()
    for module in "${staging[@]}"; do
      mapfile -t answer < <(ask "${module}@$(portcullis::staging_version "${candidate}")")
      [[ ${answer[0]} == served ]] || missing+=("${module} (${answer[0]})")
    done
    if ((${#missing[@]} > 0)); then
      echo "${minor}: k8s.io/kubernetes ${candidate} is served, but not every staging module the build uses: ${missing[*]}; not buildable here"
      continue
    fi
    echo "${minor}: k8s.io/kubernetes ${candidate} and its ${#staging[@]} staging modules are served: buildable"
    newest_buildable=${candidate}
  done
  if [[ -n ${newest_buildable} ]]; then
    echo "${minor} is pinned to ${pinned}, and ${newest_buildable} is buildable: run hack/update-kube-version.sh ${newest_buildable}" >&2
    status=1
  elif ((reached)); then
    echo "${minor}: ${pinned} is the newest buildable patch the proxy serves (asked up to v${minor}.$((patch + PROBE_WINDOW)))"
  fi
done
exit "${status}"
