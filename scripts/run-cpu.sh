#!/usr/bin/env bash
# A run's CPU and system calls, two builds side by side: the mock models on
# scenarios/starter (4 models x 35 scenarios, on the paused clock), TRIALS
# trials each (default 300: 42,000 trials), the two binaries alternated
# PAIRS times (default 5). Prints each pair's CPU (perf's task-clock), then
# each binary's system calls by name once (strace -c; those made 100 times
# or more), so that wake-ups (epoll_wait, futex) and writes per trial can
# be compared.
#
#   scripts/run-cpu.sh BEFORE AFTER [PAIRS] [TRIALS]
#
# BEFORE and AFTER are toolgauge binaries, e.g. one built from an older
# commit (git worktree add /tmp/old REV; CARGO_TARGET_DIR=/tmp/old-target
# cargo build --release) and target/release/toolgauge.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/run-cpu.sh BEFORE AFTER [PAIRS] [TRIALS]" >&2
  exit 2
fi
before=$1 after=$2 pairs=${3:-5} trials=${4:-300}
for tool in perf strace; do
  command -v "$tool" >/dev/null || { echo "run-cpu: $tool is not installed" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpu_ms() {
  perf stat -x, -e task-clock -o "$out/stat" -- "$@" run scenarios/starter --trials "$trials" \
    --quiet --out "$out/run" >/dev/null
  rm -rf "$out/run"
  awk -F, '/task-clock/ { printf "%.0f", $1 }' "$out/stat"
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| pair | before, CPU ms | after, CPU ms |"
echo "|---:|---:|---:|"
for i in $(seq "$pairs"); do
  echo "| $i | $(cpu_ms "$before") | $(cpu_ms "$after") |"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for side in before after; do
  binary=${!side}
  rm -rf "$out/run"
  strace -f -c -o "$out/strace" "$binary" run scenarios/starter --trials "$trials" --quiet \
    --out "$out/run" >/dev/null
  echo "$side: $(awk 'NR > 2 && $NF != "total" && $4 ~ /^[0-9]+$/ && $4 >= 100 { printf "%s %s, ", $NF, $4 }' "$out/strace")"
done
