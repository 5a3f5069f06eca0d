#!/usr/bin/env bash
# What `run --otlp` costs: the same live run against the local fake
# OpenAI server (examples/fake_openai.rs) with and without every trial
# exported as spans to a local collector (a Python HTTP sink that answers
# 200), the two arms alternated PAIRS times. Both keep the session log
# (the spans are made from it). Prints each arm's wall time and
# toolgauge's CPU (user + sys) a request, and the spans the sink took.
#
# Usage: scripts/otlp-overhead.sh [TRIALS 2000] [PAIRS 3] [CONCURRENCY 8] [DELAY_MS 50]
# Uses $TOOLGAUGE, or target/release/toolgauge (built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-2000}
PAIRS=${2:-3}
CONCURRENCY=${3:-8}
DELAY_MS=${4:-50}
BINARY=${TOOLGAUGE:-target/release/toolgauge}
[ -x "$BINARY" ] || cargo build --release -q
cargo build --release -q --example fake_openai

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/suite"
cat >"$WORK/suite/weather.json" <<'JSON'
{
  "name": "weather",
  "tools": [{
    "name": "get_weather",
    "description": "Current weather for a city.",
    "effect": "read",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "simulate": {"result": {"temp_c": 18}}
  }],
  "messages": [{"role": "user", "content": "Weather in Paris?"}],
  "expect": {"calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
}
JSON
target/release/examples/fake_openai "$DELAY_MS" >"$WORK/url" &
PIDS+=($!)
# The collector: takes every POST, counts its bytes, answers 200.
python3 - "$WORK/sink" >"$WORK/sink.port" <<'PY' &
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        with open(sys.argv[1], "a") as f:
            f.write(f"{len(body)}\n")
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
PIDS+=($!)
for _ in $(seq 100); do
  [ -s "$WORK/url" ] && [ -s "$WORK/sink.port" ] && break
  sleep 0.05
done
BASE_URL=$(head -n1 "$WORK/url")
SINK="http://127.0.0.1:$(head -n1 "$WORK/sink.port")"
cat >"$WORK/fake.json" <<JSON
{"name": "fake", "kind": "openai",
 "api": {"model": "fake", "base_url": "$BASE_URL", "concurrency": $CONCURRENCY,
         "timeout_ms": 10000, "max_attempts": 1}}
JSON

# CPU as perf's task-clock (to the microsecond; /usr/bin/time counts in
# 10 ms steps), wall as /usr/bin/time's.
command -v perf >/dev/null || { echo "otlp-overhead: perf is not installed" >&2; exit 2; }
arm() {
  rm -rf "$WORK/out"
  /usr/bin/time -o "$WORK/time" -f "%e" perf stat -x, -e task-clock -o "$WORK/stat" -- \
    "$BINARY" run "$WORK/suite" --models "$WORK/fake.json" \
    --trials "$TRIALS" --quiet --out "$WORK/out" "$@" >/dev/null
  read -r WALL <"$WORK/time"
  CPU_MS=$(awk -F, '/task-clock/ { print $1 }' "$WORK/stat")
  REQUESTS=$(($(wc -l <"$WORK/out/trials.csv") - 1))
  python3 -c "import sys; w,c,n=map(float,sys.argv[1:]); print(f'{w:.2f} s | {c/n:.4f} ms ({c:.0f} ms CPU over {n:.0f} requests)')" \
    "$WALL" "$CPU_MS" "$REQUESTS"
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| pair | without, wall | without, CPU a request | --otlp, wall | --otlp, CPU a request |"
echo "|---:|---:|---:|---:|---:|"
for i in $(seq "$PAIRS"); do
  without=$(arm)
  with=$(arm --otlp "$SINK")
  echo "| $i | ${without/ | / | } | ${with/ | / | } |"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "the collector took $(wc -l <"$WORK/sink") export requests, $(awk '{s+=$1} END {print s}' "$WORK/sink") bytes"
