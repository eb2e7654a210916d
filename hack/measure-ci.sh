#!/usr/bin/env bash
# Measures .ci/run the way a new machine runs it: a fresh clone of a commit, an empty Go module
# cache and an empty build cache (so the Go toolchain go.mod names is downloaded too), the
# machine's own Go settings (no go env file), and - with --purge-debs - none of the Debian
# packages the tests install. Prints each stage's line as it ends, then the stages' table
# (hack/stage.sh's log), and writes that table, with its date, into docs/ci.md.
#
#   hack/measure-ci.sh [--purge-debs] [--no-doc] [--work DIR] [REV]
#
#   REV           the commit to measure (default HEAD; uncommitted changes are not measured)
#   --purge-debs  purge the tests' Debian packages first (apt-get purge --autoremove, which
#                 also removes whatever else apt holds as no longer needed, and apt-get clean,
#                 so that their download counts too); the run installs them again. Needs root.
#                 Without it, those already installed are named in the table as not counted.
#   --no-doc      print the table only; leave docs/ci.md alone
#   --work DIR    where the clone and the caches go (default a new directory under /var/tmp;
#                 about 30 GB, removed at the end unless the run failed)
#
# It runs for as long as .ci/run does; nothing else should run beside it. CI's own runs are as
# root (the tests install Debian packages): run it as root (with go on root's PATH), or with the
# packages installed.
source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${PORTCULLIS_ROOT}"

purge_debs=false
write_doc=true
work=""
rev=HEAD
usage="usage: $0 [--purge-debs] [--no-doc] [--work DIR] [REV]"
while [[ $# -gt 0 ]]; do
  case $1 in
  --purge-debs) purge_debs=true ;;
  --no-doc) write_doc=false ;;
  --work)
    work=${2:?${usage}}
    shift
    ;;
  -*)
    echo "unknown option $1 (${usage})" >&2
    exit 2
    ;;
  *) rev=$1 ;;
  esac
  shift
done
commit=$(git rev-parse --verify "${rev}^{commit}")
if ! command -v go >/dev/null; then
  echo "go is not on PATH (sudo's secure_path leaves /usr/local/go/bin out: sudo env \"PATH=\$PATH\" $0 ...)" >&2
  exit 1
fi
doc=docs/ci.md
begin='<!-- BEGIN hack/measure-ci.sh output -->'
end='<!-- END hack/measure-ci.sh output -->'
if [[ ${write_doc} == true ]] && ! awk -v begin="${begin}" -v end="${end}" '$0 == begin { b = NR } $0 == end { e = NR } END { exit !(b && e > b) }' "${doc}"; then
  echo "${doc} lacks the lines ${begin} and, after it, ${end}: the table goes between them (or pass --no-doc)" >&2
  exit 1
fi
if [[ ${rev} == HEAD && -n $(git status --porcelain) ]]; then
  echo "note: the working tree has uncommitted changes; this measures ${commit:0:12}, without them" >&2
fi

# The Debian packages the tests install, and which of them are here, as
# hack/install-test-deps.sh sees them; systemd comes with the machines CI runs on, and is left
# alone.
mapfile -t missing < <(hack/install-test-deps.sh --missing)
installed=()
while read -r deb; do
  if [[ ${deb} != systemd && " ${missing[*]} " != *" ${deb} "* ]]; then
    installed+=("${deb}")
  fi
done < <(hack/install-test-deps.sh --packages)
if [[ $(id -u) -ne 0 ]] && { [[ ${purge_debs} == true ]] || [[ ${#missing[@]} -gt 0 ]]; }; then
  echo "run it as root: $([[ ${purge_debs} == true ]] && echo "--purge-debs purges packages" || echo "the run installs ${missing[*]}")" >&2
  exit 1
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
git clone --quiet --no-local "${PORTCULLIS_ROOT}" "${work}/src"
git -C "${work}/src" checkout --quiet --detach "${commit}"
mkdir -p "${work}/gomodcache" "${work}/gocache"

debs_note="were not installed here, so their install counts"
if [[ ${#installed[@]} -gt 0 ]]; then
  if [[ ${purge_debs} == true ]]; then
    echo "purging ${installed[*]} (the run installs them again)"
    # Put back whatever the run did not get to install again.
    trap 'hack/install-test-deps.sh >/dev/null 2>&1 || echo "reinstall the tests'"'"' Debian packages: hack/install-test-deps.sh" >&2' EXIT
    { DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove "${installed[@]}" && apt-get clean; } >"${work}/apt-purge.log" 2>&1 ||
      { cat "${work}/apt-purge.log" >&2; exit 1; }
    debs_note="were purged first (${installed[*]}), so their download and install count"
  else
    debs_note="were already installed, not counted: ${installed[*]}"
  fi
fi
debs_note="${debs_note}; systemd comes with the machine"

stages=${work}/stages.tsv
log=${work}/ci.log
: >"${stages}"
echo "measuring .ci/run at ${commit:0:12} in ${work} (its whole output: ${log})"

# Every 5 s while it runs: the time, the CPU's busy and total jiffies (/proc/stat's first
# line: user, nice, system, idle, iowait, irq, softirq, steal; the time a hypervisor stole
# counts in the total, not as the run's work), and the memory available. The
# table's "cores busy" column and the run's CPU time come from the first three, its peak
# memory from the least memory available.
samples=${work}/samples
(
  while :; do
    read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
    echo "${EPOCHREALTIME/[.,]/} $((user + nice + system + irq + softirq)) $((user + nice + system + idle + iowait + irq + softirq + steal)) $(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)"
    sleep 5
  done
) >"${samples}" &
sampler=$!
run_start_us=${EPOCHREALTIME/[.,]/}

# CI's environment: only what a fresh CI run has (no go env -w file, no make or Go settings of
# the caller's), with the caches empty.
start=$(date +%s)
status=0
(
  cd "${work}/src"
  env -i PATH="${PATH}" HOME="${HOME}" CI=true GOENV=off GOMODCACHE="${work}/gomodcache" \
    GOCACHE="${work}/gocache" PORTCULLIS_STAGE_LOG="${stages}" \
    bash .ci/run </dev/null 2>&1 | tee "${log}" | grep --line-buffered '^<== '
) || status=$?
total=$(($(date +%s) - start))
kill "${sampler}"
mem_total=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
mem_peak=$((mem_total - $(awk '{ print $4 }' "${samples}" | sort -n | head -n 1)))
# The run's CPU time, in core-minutes, and the cores busy on average (the machine's).
cores_busy=$(portcullis::cores_busy "${samples}" "${run_start_us}" "${EPOCHREALTIME/[.,]/}")
cpu_minutes=$(awk -v cores="${cores_busy}" -v seconds="${total}" 'BEGIN { if (cores == "-") print "-"; else printf "%.0f\n", cores * seconds / 60 }')

table=${work}/table.md
{
  echo "Measured by \`hack/measure-ci.sh\` on $(date -u +%Y-%m-%d) at ${commit:0:12}: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $((mem_total / 1048576)) GiB, a fresh clone, empty module and build caches (the Go toolchain downloaded too; GOPROXY $(cd / && env -u GOTOOLCHAIN GOENV=off go env GOPROXY)); the tests' Debian packages ${debs_note}. Rows under background ran beside the others, at the lowest priority; a \"background:\" row is the wait for what it had left. At most $((mem_peak / 1024)) MiB of memory were in use; ${cores_busy} cores were busy on average, ${cpu_minutes} core-minutes in all (the machine's, sampled every 5 s: \"cores busy\" is a stage's average, whatever ran beside it)."
  echo
  portcullis::stage_table "${stages}" markdown "${samples}"
  echo "| **whole \`.ci/run\`** | **$(portcullis::minutes "${total}")**$([[ ${status} -eq 0 ]] || echo " (failed, exit ${status})") | ${cores_busy} |"
  echo
  echo "At the end the build cache held $(du -sh "${work}/gocache" | cut -f1), the module cache $(du -sh "${work}/gomodcache" | cut -f1)."
} >"${table}"
echo
cat "${table}"
if [[ ${status} -ne 0 ]]; then
  echo ".ci/run failed (exit ${status}): its log and caches are kept in ${work}" >&2
  exit 1
fi
if [[ ${write_doc} == true ]]; then
  # Between the markers, written in place (the file keeps its owner when run through sudo).
  updated=$(awk -v begin="${begin}" -v end="${end}" -v table="${table}" '
    $0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }' "${doc}")
  printf '%s\n' "${updated}" >"${doc}"
  echo "wrote the table into ${doc}"
fi
chmod -R u+w "${work}/gomodcache"
rm -rf "${work}"
