#!/usr/bin/env bash
# The per-trial cost of one tau2 conversation in toolgauge, through the
# bridge (the `tau2-results` model replays it: no model time), against
# tau2's own orchestrator on the same recorded messages
# (scripts/tau2_bridge/tau2_loop.py), in one sitting. The bridge forks
# each trial's server from one loaded process: its start-up is in the
# per-trial cost (start_time.py gives it alone).
#
#   TOOLGAUGE_TAU2_PYTHON=VENV/bin/python scripts/tau2_bridge/overhead.sh [SIMULATION] [TRIALS]
#
# SIMULATION: an id in tests/fixtures/tau2/airline.json [airline_44_gold:
# 21 agent messages, 19 calls].
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${TOOLGAUGE_TAU2_PYTHON:?"set TOOLGAUGE_TAU2_PYTHON to a Python with tau2 and mcp (see docs/tau2.md)"}
simulation=${1:-airline_44_gold}
trials=${2:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cargo build -q --release
task=$(python3 - tests/fixtures/tau2/airline.json "$simulation" "$dir/one.json" <<'PY'
import json, sys
path, wanted, out = sys.argv[1:]
results = json.load(open(path))
results["simulations"] = [s for s in results["simulations"] if s["id"] == wanted]
json.dump(results, open(out, "w"))
print(results["simulations"][0]["task_id"])
PY
)
target/release/toolgauge import tau2 --domain airline \
  --bridge "$python scripts/tau2_bridge/bridge.py" --out "$dir/all" >/dev/null 2>&1
mkdir "$dir/suite"
cp "$dir/all/tau2_airline_$task.json" "$dir/suite/"
echo "{\"name\": \"replay\", \"kind\": \"tau2-results\", \"results\": \"$dir/one.json\"}" >"$dir/replay.json"

# Two runs, few and many trials: the difference is the trials' own cost,
# the run's fixed cost (loading, the listing bridge, reports) cancelled.
run() {
  local started ended
  started=$(date +%s%N)
  target/release/toolgauge run "$dir/suite" --models "$dir/replay.json" --trials "$1" \
    --concurrency 1 --no-session --quiet --out "$dir/out-$1" >/dev/null 2>&1
  ended=$(date +%s%N)
  echo $((ended - started))
}
few=$((trials / 4))
few_ns=$(run "$few")
many_ns=$(run "$trials")
tau2=$(cd scripts/tau2_bridge && "$python" tau2_loop.py "$dir/one.json" "$simulation" "$trials" 2>/dev/null)

python3 - "$dir/out-$trials" "$few" "$few_ns" "$trials" "$many_ns" "$tau2" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import csv, json, sys
out, few, few_ns, many, many_ns, tau2, load = sys.argv[1:]
source = next(csv.DictReader(open(f"{out}/tool_sources.csv")))
rewards = [r["reward"] for r in csv.DictReader(open(f"{out}/trials.csv")) if r["reward"]]
per_trial = (int(many_ns) - int(few_ns)) / 1e6 / (int(many) - int(few))
tau2 = json.loads(tau2)
print(f"toolgauge, per trial ({few} and {many} trials, the difference), its server's "
      f"start-up (a fork) in it: {per_trial:.1f} ms; {source['startups']} start-ups; "
      f"rewards {sorted(set(rewards))}")
print(f"tau2's orchestrator: {tau2['ms_per_trial']:.1f} ms (of which evaluation "
      f"{tau2['of_which_evaluation_ms']:.1f} ms), its environment made apart in "
      f"{tau2['environment_ms']:.1f} ms; reward {tau2['reward']} (recorded {tau2['recorded_reward']})")
print(f"ratio (toolgauge / tau2): {per_trial / tau2['ms_per_trial']:.2f}x; load average {load}")
PY
