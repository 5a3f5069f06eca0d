#!/usr/bin/env bash
# The fuzz command's rate and memory from the command line: every built-in
# tool, the built-in validator, for each --cases given (default 10000
# 100000 1000000). Prints instances judged, wall and CPU seconds,
# instances per second of each (CPU holds on a loaded machine; wall does
# not) and peak RSS. Uses the release binary (built if missing).
#
#   scripts/fuzz-rate.sh [CASES ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/toolgauge ] || cargo build --release --quiet
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target/release/toolgauge tools list builtin >"$out/tools.json"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| --cases | instances | wall | CPU | instances/s wall | instances/s CPU | peak RSS |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for cases in "${@:-10000 100000 1000000}"; do
  for n in $cases; do
    /usr/bin/time -f "%e %U %S %M" -o "$out/time" target/release/toolgauge fuzz --tools "$out/tools.json" \
      --cases "$n" --out "$out/run" >/dev/null 2>&1
    # Each operator's total row (empty path) counts its instances once.
    instances=$(awk -F, 'NR > 1 && $8 == "" { n += $3 } END { print n }' "$out/run/fuzz.csv")
    read -r wall user sys rss <"$out/time"
    awk -v c="$n" -v i="$instances" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" \
      'BEGIN { cpu = u + s; printf "| %d | %d | %.2f s | %.2f s | %d | %d | %d MB |\n", c, i, w, cpu, i / w, i / cpu, r / 1024 }'
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
