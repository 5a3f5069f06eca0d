#!/usr/bin/env bash
# tau2-bench's airline tasks with the real small model of
# scripts/real-model.sh (Qwen2.5-Coder-0.5B on llama.cpp's server) as the
# agent and as the user, run twice: by tau2 itself (`tau2 run`, through
# litellm) and by toolgauge (`import tau2 --user`, then `run --user-model`).
# tau2's own Results JSON is then replayed through toolgauge (the
# `tau2-results` model): every simulation must get tau2's recorded reward.
#
#   scripts/tau2-real-model.sh [N [STAGES [USER_TURNS]]]
#       N: the first N airline tasks [5]; STAGES: tau2, toolgauge or
#       both [both]; USER_TURNS: toolgauge's bound on the user's turns
#       [50, the import's] (tau2's own run is bounded by its 200 steps;
#       a 0.5B model loops until a bound: about 15 minutes a task here)
#
# Needs scripts/real-model.sh install and $TOOLGAUGE_TAU2_PYTHON (the
# venv .ci/run makes). Two servers of their own (ports 8771 and 8772),
# with prompt caching on and a 16k context: tau2's agent prompt is 8k
# tokens, read once per conversation and not at every turn. Caching makes
# greedy answers depend on what the server computed before: the runs are
# real runs, not a reproducible fixture. Writes reports/tau2-real-model/.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-5}
STAGES=${2:-both}
USER_TURNS=${3:-50}
: "${TOOLGAUGE_TAU2_PYTHON:?name the Python of tau2-bench (see docs/tau2.md)}"
TAU2_BIN=$(dirname "$TOOLGAUGE_TAU2_PYTHON")/tau2
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/toolgauge
VENV=$CACHE/real-model-xllamacpp-0.2.12
GGUF=$CACHE/qwen2.5-coder-0.5b-instruct-q4_k_m-1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32.gguf
ALIAS=qwen2.5-coder-0.5b
AGENT_PORT=8771
USER_PORT=8772
OUT=reports/tau2-real-model
STATE=target/tau2-real-model
TOOLGAUGE=${TOOLGAUGE:-target/release/toolgauge}
[ -x "$TOOLGAUGE" ] || cargo build --release --quiet
[ -f "$GGUF" ] || { echo "run scripts/real-model.sh install first" >&2; exit 2; }

mkdir -p "$OUT" "$STATE"
stop() {
  for name in agent user; do
    [ -f "$STATE/$name.pid" ] || continue
    kill -TERM -- "-$(cat "$STATE/$name.pid")" 2>/dev/null || true
    rm -f "$STATE/$name.pid"
  done
}
trap stop EXIT

serve() {
  local name=$1 port=$2 context=$3
  setsid "$VENV/bin/python" scripts/real_model/serve.py "$GGUF" "$ALIAS" "$port" 1 "$context" 1 \
    >"$STATE/$name.log" 2>&1 &
  echo $! >"$STATE/$name.pid"
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return
    sleep 1
  done
  echo "$name server did not start" >&2
  tail "$STATE/$name.log" >&2
  exit 1
}
serve agent $AGENT_PORT 16384
serve user $USER_PORT 8192

# The first N airline task ids, in tau2's order.
IDS=$("$TOOLGAUGE_TAU2_PYTHON" scripts/tau2_bridge/bridge.py --domain airline --export 2>/dev/null |
  python3 -c "import json, sys; print(' '.join(json.loads(l)['id'] for l in list(sys.stdin)[:$N]))")
echo "== airline tasks: $IDS"

# tau2 writes under its data folder: a copy of links, with a folder of
# its own for the results.
DATA=$STATE/data
rm -rf "$DATA" && mkdir -p "$DATA/simulations"
ln -s "$(realpath ../shared/oracles/tau2/tau2-bench/data/tau2)" "$DATA/tau2"
llm_args() {
  printf '{"api_base": "http://127.0.0.1:%s/v1", "api_key": "none", "temperature": 0.0, "max_tokens": 256, "timeout": 600}' "$1"
}
if [ "$STAGES" != toolgauge ]; then
echo "== tau2 run: $N tasks, one trial"
started=$SECONDS
# shellcheck disable=SC2086 # one argument per task id
TAU2_DATA_DIR=$DATA "$TAU2_BIN" run --domain airline --task-ids $IDS --num-trials 1 \
  --agent-llm "openai/$ALIAS" --agent-llm-args "$(llm_args $AGENT_PORT)" \
  --user-llm "openai/$ALIAS" --user-llm-args "$(llm_args $USER_PORT)" \
  --max-concurrency 1 --seed 1 --save-to real-model-airline --log-level WARNING \
  >"$OUT/tau2-run.log" 2>&1 || { tail -30 "$OUT/tau2-run.log" >&2; exit 1; }
echo "tau2 run: $((SECONDS - started)) s"
cp "$DATA/simulations/real-model-airline/results.json" "$OUT/tau2-results.json"
fi
[ "$STAGES" != tau2 ] || exit 0

echo "== toolgauge: the same tasks, the model as agent and as user"
rm -rf "$OUT/airline" "$OUT/suite" && mkdir -p "$OUT/suite"
"$TOOLGAUGE" import tau2 --domain airline --user qwen-user \
  --bridge "$TOOLGAUGE_TAU2_PYTHON scripts/tau2_bridge/bridge.py" --out "$OUT/airline" >/dev/null
for id in $IDS; do
  python3 - "$OUT/airline/tau2_airline_$id.json" "$OUT/suite/tau2_airline_$id.json" "$USER_TURNS" <<'PY'
import json, sys
source, target, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
task = json.load(open(source))
task["task"]["user"]["max_turns"] = turns
json.dump(task, open(target, "w"), indent=1)
PY
done
model() {
  local name=$1 port=$2
  printf '{"name": "%s", "kind": "openai", "api": {"model": "%s", "base_url": "http://127.0.0.1:%s/v1", "temperature": 0, "max_tokens": 256, "timeout_ms": 600000, "max_attempts": 1, "concurrency": 1}}\n' \
    "$name" "$ALIAS" "$port"
}
model qwen-agent $AGENT_PORT >"$OUT/agent.json"
model qwen-user $USER_PORT >"$OUT/user.json"
started=$SECONDS
set +e
"$TOOLGAUGE" run "$OUT/suite" --models "$OUT/agent.json" --user-model "$OUT/user.json" \
  --trials 1 --seed 1 --concurrency 1 --quiet --force --out "$OUT/run"
set -e
echo "toolgauge run: $((SECONDS - started)) s"

[ -f "$OUT/tau2-results.json" ] || exit 0
echo "== tau2's Results JSON replayed through toolgauge"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
results = json.load(open(f"{out}/tau2-results.json"))
model = {"name": "tau2-run", "kind": "tau2-results", "results": "tau2-results.json"}
json.dump(model, open(f"{out}/tau2-run.json", "w"))
for s in results["simulations"]:
    info = s.get("reward_info") or {}
    print(f"tau2: task {s['task_id']}: reward {info.get('reward')}, ended {s['termination_reason']}")
PY
"$TOOLGAUGE" run "$OUT/suite" --models "$OUT/tau2-run.json" --trials 1 --quiet --force \
  --out "$OUT/replayed" || true
