#!/usr/bin/env bash
# Measures .ci/run the way a new machine runs it: a fresh clone of a commit, an empty Go module
# cache and an empty build cache (so the Go toolchain go.mod names is downloaded too), and none
# of the Debian packages the tests install (they are purged first, so their download and
# install count). Prints each stage's minutes (hack/stage.sh's log) and writes them as a
# Markdown table, the one README quotes.
#
#   hack/measure-ci.sh [--keep-debs] [--out FILE] [--work DIR] [REV]
#
#   REV          the commit to measure (default HEAD; uncommitted changes are not measured)
#   --out FILE   where the table goes (default _output/measure-ci.md)
#   --work DIR   where the clone and the caches go (default a new directory under /var/tmp;
#                they take about 30 GB, and are removed at the end unless the run failed)
#   --keep-debs  leave the tests' Debian packages installed: their install is then not
#                counted, and the table says so
#
# It needs root to purge and reinstall the Debian packages (as CI has); it runs for as long as
# .ci/run does (40 to 70 minutes on a 2-core machine), and nothing else should run beside it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

keep_debs=false
out=${PORTCULLIS_ROOT}/_output/measure-ci.md
work=""
rev=HEAD
while [[ $# -gt 0 ]]; do
  case $1 in
  --keep-debs) keep_debs=true ;;
  --out) out=$2; shift ;;
  --work) work=$2; shift ;;
  -*) echo "unknown option $1 (usage: $0 [--keep-debs] [--out FILE] [--work DIR] [REV])" >&2; exit 2 ;;
  *) rev=$1 ;;
  esac
  shift
done
commit=$(git rev-parse --verify "${rev}^{commit}")
if [[ ${rev} == HEAD && -n $(git status --porcelain) ]]; then
  echo "note: the working tree has uncommitted changes; this measures ${commit}, without them" >&2
fi
if [[ -z ${work} ]]; then
  work=$(mktemp -d /var/tmp/portcullis-measure-ci.XXXXXX)
fi
mkdir -p "${work}"
work=$(cd "${work}" && pwd)
if [[ -n $(ls -A "${work}") ]]; then
  echo "${work} is not empty: the caches must start empty" >&2
  exit 1
fi
mkdir -p "$(dirname "${out}")"
out=$(cd "$(dirname "${out}")" && pwd)/$(basename "${out}")

# The Debian packages the tests install (hack/install-test-deps.sh names them) and a new
# machine lacks; systemd comes with the machine.
debs_note="purged first: their download and install are counted"
mapfile -t debs < <(hack/install-test-deps.sh --packages | grep -vx systemd)
installed=()
for deb in "${debs[@]}"; do
  if dpkg-query -W -f='${Status}' "${deb}" 2>/dev/null | grep -q 'install ok installed'; then
    installed+=("${deb}")
  fi
done
if [[ ${#installed[@]} -gt 0 ]]; then
  if [[ ${keep_debs} == true ]]; then
    debs_note="already installed, not counted: ${installed[*]}"
  elif [[ $(id -u) -ne 0 ]]; then
    echo "purging ${installed[*]} needs root (or pass --keep-debs, and their install is not counted)" >&2
    exit 1
  else
    echo "purging ${installed[*]} (the run installs them again)"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove "${installed[@]}" >"${work}/apt-purge.log" 2>&1 ||
      { cat "${work}/apt-purge.log" >&2; exit 1; }
  fi
fi

git clone --quiet --no-local "${PORTCULLIS_ROOT}" "${work}/src"
git -C "${work}/src" checkout --quiet --detach "${commit}"
mkdir -p "${work}/gomodcache" "${work}/gocache"
stages=${work}/stages.tsv
: >"${stages}"
log=${work}/ci.log
echo "measuring .ci/run at ${commit:0:12} in ${work} (log: ${log})"

# CI's environment: the machine's, with the caches empty and the machine's own Go settings
# (GOTOOLCHAIN=local), none of this script's.
start=$(date +%s)
status=0
(
  cd "${work}/src"
  env -u GOTOOLCHAIN -u GOFLAGS -u PORTCULLIS_ROOT -u PORTCULLIS_STAGE CI=true \
    GOMODCACHE="${work}/gomodcache" GOCACHE="${work}/gocache" PORTCULLIS_STAGE_LOG="${stages}" \
    bash .ci/run </dev/null
) >"${log}" 2>&1 || status=$?
total=$(($(date +%s) - start))

minutes() { printf '%d.%d' $(($1 / 60)) $(($1 % 60 * 10 / 60)); }
{
  echo "Measured by \`hack/measure-ci.sh\` on $(date -u +%Y-%m-%d) at ${commit:0:12}: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), a fresh clone, empty module and build caches; the tests' Debian packages ${debs_note}."
  echo
  echo "| stage | minutes |"
  echo "|---|---|"
  while IFS=$'\t' read -r name seconds rc; do
    suffix=""
    [[ ${rc} -eq 0 ]] || suffix=" (failed)"
    echo "| ${name} | $(minutes "${seconds}")${suffix} |"
  done <"${stages}"
  echo "| **whole \`.ci/run\`** | **$(minutes "${total}")**$([[ ${status} -eq 0 ]] || echo " (failed, exit ${status})") |"
  echo
  echo "At the end the build cache held $(du -sh "${work}/gocache" | cut -f1), the module cache $(du -sh "${work}/gomodcache" | cut -f1)."
} >"${out}"
cat "${out}"
if [[ ${status} -ne 0 ]]; then
  echo ".ci/run failed (exit ${status}): its log and caches are kept in ${work}" >&2
  tail -n 50 "${log}" >&2
  exit 1
fi
chmod -R u+w "${work}/gomodcache"
rm -rf "${work}"
echo "wrote ${out}"
