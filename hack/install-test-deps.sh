#!/usr/bin/env bash
# Installs, from Debian, the tools the integration and release tests run when they are
# missing: skopeo (reads the OCI image archive), systemd (systemd-analyze verifies the unit)
# and prometheus (promtool checks and unit-tests the alerting rules and backfills the usage
# history InitialResources's test serves with prometheus); with --node, also what the real
# node needs (make test-node): libseccomp's headers and pkg-config (runc's seccomp,
# test/node/build-runtime.sh), iptables and iproute2. `make test-integration` and `make
# test-release` run it, `make test-node` with --node; it needs root to install (CI has it),
# and does nothing when all are present. With --packages it prints the Debian packages it
# installs, one a line, and with --missing those it would install now (hack/measure-ci.sh
# reads both; --node before either adds the node's).
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

# Each package, and the commands the tests need from it (an absolute path: a file).
declare -A commands_of=(
  [skopeo]="skopeo"
  [systemd]="systemd-analyze"
  [prometheus]="promtool prometheus"
)
# The real node's; iproute2 and iptables are base packages of most machines: never listed by
# --packages (hack/measure-ci.sh --purge-debs purges what it lists).
if [[ ${1:-} == --node ]]; then
  shift
  commands_of+=(
    [libseccomp-dev]="/usr/include/seccomp.h"
    [pkg-config]="pkg-config"
    [iptables]="iptables"
    [iproute2]="ip"
  )
fi
if [[ ${1:-} == --packages ]]; then
  printf '%s\n' "${!commands_of[@]}" | sort
  exit 0
fi

missing=()
for package in $(printf '%s\n' "${!commands_of[@]}" | sort); do
  for command in ${commands_of[${package}]}; do
    if { [[ ${command} == /* ]] && [[ ! -e ${command} ]]; } || { [[ ${command} != /* ]] && ! command -v "${command}" >/dev/null; }; then
      missing+=("${package}")
      break
    fi
  done
done
if [[ ${1:-} == --missing ]]; then
  if [[ ${#missing[@]} -gt 0 ]]; then
    printf '%s\n' "${missing[@]}"
  fi
  exit 0
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "the integration and release tests need ${missing[*]}: run sudo $0 (or apt-get install ${missing[*]})" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "the integration and release tests need ${missing[*]}, and there is no apt-get here to install them: install them yourself" >&2
  exit 1
fi
echo "installing ${missing[*]} for the integration and release tests"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
