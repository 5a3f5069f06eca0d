#!/usr/bin/env bash
# The per-trial cost of one BFCL multi-turn entry in toolgauge, through the
# bridge (the scripted mock, instant, plays the ground truth; each turn
# judged by the bridge's probe), against BFCL's own loop on the same entry
# (scripts/bfcl_bridge/bfcl_loop.py), in one sitting. The bridge's
# start-up per trial is reported apart.
#
#   TOOLGAUGE_BFCL_PYTHON=VENV/bin/python scripts/bfcl_bridge/overhead.sh [ENTRY] [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${TOOLGAUGE_BFCL_PYTHON:?"set TOOLGAUGE_BFCL_PYTHON to a Python with bfcl-eval and mcp (see docs/bfcl.md)"}
entry=${1:-multi_turn_base_0}
trials=${2:-20}
category=${entry%_*}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cargo build -q --release
target/release/toolgauge import bfcl "../shared/corpora/bfcl/BFCL_v4_$category.json" \
  --out "$dir/all" --bridge "$python scripts/bfcl_bridge/bridge.py" >/dev/null 2>&1
mkdir "$dir/suite"
cp "$dir/all/$entry.json" "$dir/suite/"
echo '{"name": "instant", "kind": "scripted", "provider": "openai", "parameters": {"latency_ms": 0}}' >"$dir/instant.json"

# Two runs, few and many trials: the difference is the trials' own cost,
# the run's fixed cost (loading, the listing server, reports) cancelled.
run() {
  local started ended
  started=$(date +%s%N)
  target/release/toolgauge run "$dir/suite" --models "$dir/instant.json" --trials "$1" \
    --concurrency 1 --no-session --quiet --out "$dir/out-$1" >/dev/null 2>&1
  ended=$(date +%s%N)
  echo $((ended - started))
}
few=$((trials / 4))
few_ns=$(run "$few")
many_ns=$(run "$trials")
bfcl=$("$python" scripts/bfcl_bridge/bfcl_loop.py "$entry" "$trials")

"$python" - "$dir/out-$trials/tool_sources.csv" "$few" "$few_ns" "$trials" "$many_ns" "$bfcl" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import csv, json, sys
sources, few, few_ns, many, many_ns, bfcl, load = sys.argv[1:]
source = next(csv.DictReader(open(sources)))
per_trial = (int(many_ns) - int(few_ns)) / 1e6 / (int(many) - int(few))
# The per-trial servers' start-ups (the first start-up lists the tools).
startup = float(source["startup_ms_mean"])
bfcl = json.loads(bfcl)["ms_per_trial"]
print(f"toolgauge, per trial ({few} and {many} trials, the difference): {per_trial:.1f} ms, "
      f"of which the bridge's start-up about {startup:.1f} ms")
print(f"toolgauge without the start-up: {per_trial - startup:.1f} ms; BFCL's own loop: {bfcl:.2f} ms")
print(f"ratio (toolgauge without start-up / BFCL): {(per_trial - startup) / bfcl:.1f}x; load average {load}")
PY
