#!/usr/bin/env bash
# Validation against Ajv, side by side: PAIRS alternating runs of
# `cargo bench --bench validate` (small_hot rows) and the Node anchor
# (../shared/anchors/bench.js, its h1 and h2 rows) on the same workload,
# each pair in the other order from the last. Prints every pair and the
# min / median / max of the ratios (above 1: toolgauge is faster).
#
#   scripts/vs-ajv.sh [PAIRS]     (default 10)
#
# The decision alone (tool lookup, then valid or not) is compared with
# Ajv's h1; with every error of an invalid call worded, with h2. Needs
# Node and npm; Ajv is installed once into target/anchor.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-10}
. scripts/anchor.sh
cargo bench --quiet --bench validate --no-run

rust() {
  cargo bench --quiet --bench validate -- 'small_hot/toolgauge' \
    --measurement-time 2 --warm-up-time 1 --noplot >/dev/null 2>&1
  python3 - <<'PY'
import json
def per_call(name):
    with open(f"target/criterion/validate/small_hot_{name}/new/estimates.json") as f:
        return json.load(f)["median"]["point_estimate"] / 1000
print(per_call("toolgauge_is_valid"), per_call("toolgauge"))
PY
}

node_rows() {
  (cd "$dir" && RUNS=5 BENCH=h node bench.js) |
    awk '/^\(h1\)/ { for (i = 1; i <= NF; i++) if ($i == "ns/op") h1 = $(i-1) }
         /^\(h2\)/ { for (i = 1; i <= NF; i++) if ($i == "ns/op") h2 = $(i-1) }
         END { print h1, h2 }'
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) -eq 1 ]; then
    ours=$(rust); theirs=$(node_rows)
  else
    theirs=$(node_rows); ours=$(rust)
  fi
  echo "$pair $ours $theirs" >>"$results"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("| pair | toolgauge decision | Ajv h1 | ratio | toolgauge worded | Ajv h2 | ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
decision, worded = [], []
for pair, ours_h1, ours_h2, h1, h2 in rows:
    r1, r2 = float(h1) / float(ours_h1), float(h2) / float(ours_h2)
    decision.append(r1)
    worded.append(r2)
    print(f"| {pair} | {float(ours_h1):.1f} ns | {h1} ns | {r1:.2f}x | {float(ours_h2):.1f} ns | {h2} ns | {r2:.2f}x |")
for name, ratios in (("decision (h1)", decision), ("worded errors (h2)", worded)):
    print(f"{name}: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} pairs")
PY
