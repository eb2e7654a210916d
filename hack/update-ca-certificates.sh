#!/usr/bin/env bash
# Refreshes build/image/ca-certificates.crt, the CA bundle the release image ships at
# /etc/ssl/certs/ca-certificates.crt, from this machine's Debian ca-certificates package:
# Mozilla's roots exactly as the package installs them under /usr/share/ca-certificates/mozilla,
# concatenated in name order, after `dpkg --verify` has checked them against the package.
#
# The machine's own /etc/ssl/certs/ca-certificates.crt is deliberately not used: it also holds
# whatever local CAs were added under /usr/local/share/ca-certificates (proxies, sandboxes),
# which must never ship. Commit the result; `make release` reads only the committed file, so
# the image's bytes depend on the commit, not on the build machine.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

if ! version=$(dpkg-query -W -f='${Version}' ca-certificates 2>/dev/null); then
  echo "the Debian package ca-certificates is not installed: apt-get install ca-certificates" >&2
  exit 1
fi
if ! dpkg --verify ca-certificates; then
  echo "ca-certificates ${version}: the installed files differ from the package's; reinstall it" >&2
  exit 1
fi
mapfile -t certs < <(dpkg -L ca-certificates | grep '^/usr/share/ca-certificates/mozilla/.*\.crt$' | LC_ALL=C sort)
if [[ ${#certs[@]} -eq 0 ]]; then
  echo "ca-certificates ${version}: no certificates under /usr/share/ca-certificates/mozilla" >&2
  exit 1
fi
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")

out=build/image/ca-certificates.crt
{
  echo "# Mozilla's CA certificates from Debian ${codename} ca-certificates ${version}: ${#certs[@]} certificates."
  echo "# Written by hack/update-ca-certificates.sh; shipped by build/image as ${out##*/}."
  for cert in "${certs[@]}"; do
    # Each file is one PEM certificate; make sure it ends with a newline.
    sed -e '$a\' "${cert}"
  done
} >"${out}.tmp"
mv "${out}.tmp" "${out}"
echo "wrote ${out}: ${#certs[@]} certificates from Debian ${codename} ca-certificates ${version}"
