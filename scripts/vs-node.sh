#!/usr/bin/env bash
# Parse and the pipeline against Node, as shipped: PAIRS alternating runs
# of the pipeline bench built with the `dist` profile's settings (fat
# link-time optimization, one codegen unit) and of the Node anchor
# (../shared/anchors/bench.js, its (c) and (b2) rows, b1 left out: it
# takes minutes and no figure uses it), each pair in the other order from
# the last, on the same workload. Per pair: each row's time, and each
# process's wall and CPU seconds (CPU holds on a loaded machine; a
# process that got less than its core shows it). Ratios above 1 mean
# toolgauge is faster.
#
#   scripts/vs-node.sh [PAIRS]     (default 6)
#
# Rows: Parse of the anchors' Anthropic reply (3 tool_use blocks) against
# (c), JSON.parse and extract; the pipeline, per call, as b2 works (the
# calls parsed before the clock starts) and as a run records (Parse
# counted too, which b2 does not do), against (b2). Needs Node and npm;
# Ajv is installed once into target/anchor. The build takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-6}
. scripts/anchor.sh
# bench.js without its b1 row; b2's code is left as it is.
python3 - "$anchors/bench.js" "$dir/bench_b2.js" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
b1 = re.compile(r"\n    await bench\('\(b1\).*?\n    \}\);\n    const lines = .*?\n    console\.log\(`   \(log check.*?\n", re.S)
text, n = b1.subn("\n", text)
if n != 1:
    sys.exit("vs-node: bench.js's b1 row is not where this script looks for it")
open(sys.argv[2], "w").write(text)
PY

export CARGO_PROFILE_BENCH_LTO=fat CARGO_PROFILE_BENCH_CODEGEN_UNITS=1
export CARGO_TARGET_DIR="$PWD/target/dist-bench"
export CRITERION_HOME="$CARGO_TARGET_DIR/criterion"
bin=$(cargo bench --quiet --bench pipeline --no-run --message-format=json |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "pipeline" and m.get("executable"):
        print(m["executable"])')

times=$(mktemp)
results=$(mktemp)
trap 'rm -f "$times" "$results"' EXIT

# Prints: parse ns, b2's work ns a call, whole turn ns a call, wall s, CPU s.
rust() {
  /usr/bin/time -f "%e %U %S" -o "$times" "$bin" --bench --noplot \
    --warm-up-time 1 --measurement-time 3 \
    '^(pipeline_parse/anthropic_anchor_response|pipeline/(parsed_3_calls_recorded_as_a_run|full_3_calls_recorded_as_a_run))$' \
    >/dev/null 2>&1
  python3 - "$CRITERION_HOME" "$times" <<'PY'
import json, sys
home, times = sys.argv[1], sys.argv[2]
def median(path):
    with open(f"{home}/{path}/new/estimates.json") as f:
        return json.load(f)["median"]["point_estimate"]
wall, user, system = map(float, open(times).read().split()[-3:])
print(median("pipeline_parse/anthropic_anchor_response"),
      median("pipeline/parsed_3_calls_recorded_as_a_run") / 3,
      median("pipeline/full_3_calls_recorded_as_a_run") / 3,
      wall, user + system)
PY
}

# Prints: (c) ns, (b2) ns a call, wall s, CPU s.
node_rows() {
  (cd "$dir" && RUNS=1 BENCH=c,b /usr/bin/time -f "%e %U %S" -o "$times" node bench_b2.js) |
    awk '/^\(c\) / { for (i = 1; i <= NF; i++) if ($i == "ns/op") c = $(i-1) }
         /^\(b2\)/ { for (i = 1; i <= NF; i++) if ($i == "ns/op") b2 = $(i-1) }
         END { gsub(",", "", c); gsub(",", "", b2); print c, b2 }'
  awk '{ print $(NF-2), $(NF-1) + $NF }' "$times"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) -eq 1 ]; then
    ours=$(rust); theirs=$(node_rows | tr '\n' ' ')
  else
    theirs=$(node_rows | tr '\n' ' '); ours=$(rust)
  fi
  echo "$pair $ours $theirs" >>"$results"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("| pair | Node (c) | Parse | ratio | Node (b2) | b2's work | ratio | whole turn, as a run | ratio | toolgauge wall / CPU | Node wall / CPU |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
parse, work, turn = [], [], []
for pair, p, w, t, rwall, rcpu, c, b2, nwall, ncpu in rows:
    p, w, t, c, b2 = map(float, (p, w, t, c, b2))
    parse.append(c / p); work.append(b2 / w); turn.append(b2 / t)
    print(f"| {pair} | {c:,.0f} ns | {p:,.0f} ns | {c / p:.2f}x | {b2:,.0f} ns | {w:,.0f} ns | {b2 / w:.2f}x "
          f"| {t:,.0f} ns | {b2 / t:.2f}x | {float(rwall):.1f} s / {float(rcpu):.1f} s | {float(nwall):.1f} s / {float(ncpu):.1f} s |")
for name, ratios in (("Parse vs (c)", parse), ("b2's work vs (b2)", work), ("whole turn vs (b2)", turn)):
    print(f"{name}: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} pairs")
PY
