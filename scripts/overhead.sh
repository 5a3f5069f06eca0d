#!/usr/bin/env bash
# toolgauge's own share of a live run's wall time: a run against a local
# fake OpenAI server that answers every request after a fixed delay
# (examples/fake_openai.rs: tokio's timer through wiremock). With C
# requests in flight, the server alone needs ceil(trials / C) x delay;
# the rest of the wall time is toolgauge's (start-up, scheduling, Parse
# to Record, reports) and the fake server's own tens of microseconds a
# request. CPU seconds are printed beside the wall time: they hold on a
# loaded machine.
#
# Usage: scripts/overhead.sh [TRIALS 2000] [CONCURRENCY 8] [DELAY_MS 50]
# Uses $TOOLGAUGE, or target/release/toolgauge (built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-2000}
CONCURRENCY=${2:-8}
DELAY_MS=${3:-50}
BINARY=${TOOLGAUGE:-target/release/toolgauge}
[ -x "$BINARY" ] || cargo build --release -q
cargo build --release -q --example fake_openai

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
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
SERVER_PID=$!
for _ in $(seq 100); do
  [ -s "$WORK/url" ] && break
  sleep 0.05
done
BASE_URL=$(head -n1 "$WORK/url")
cat >"$WORK/fake.json" <<JSON
{"name": "fake", "kind": "openai",
 "api": {"model": "fake", "base_url": "$BASE_URL", "concurrency": $CONCURRENCY,
         "timeout_ms": 10000, "max_attempts": 1}}
JSON

/usr/bin/time -o "$WORK/time" -f "%e %U %S" "$BINARY" run "$WORK/suite" --models "$WORK/fake.json" \
  --trials "$TRIALS" --no-session --quiet --out "$WORK/out" >/dev/null
read -r WALL USER SYS <"$WORK/time"
python3 - "$WALL" "$USER" "$SYS" "$CONCURRENCY" "$DELAY_MS" "$(cut -d' ' -f1 /proc/loadavg)" "$WORK/out/trials.csv" <<'PY'
import csv, math, sys
wall, user, sys_s = map(float, sys.argv[1:4])
concurrency, delay_ms, load = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
model_ms = [float(row["model_ms"]) for row in csv.DictReader(open(sys.argv[7]))]
requests = len(model_ms)
# The delays alone, and the requests as toolgauge timed them (the
# server's delay, its timer's rounding, HTTP both ways) spread over the
# requests in flight.
ideal = math.ceil(requests / concurrency) * delay_ms / 1000
timed = sum(model_ms) / 1000 / concurrency
cpu = user + sys_s
print(f"{requests} requests, {concurrency} in flight, {delay_ms:.0f} ms each (load {load}):")
print(f"  wall {wall:.2f} s; the delays alone {ideal:.2f} s, the requests as timed {timed:.2f} s")
print(f"  toolgauge's share: {100 * (wall - timed) / wall:.2f}% beyond the requests as timed, "
      f"{100 * (wall - ideal) / wall:.2f}% beyond the delays")
print(f"  toolgauge CPU {cpu:.2f} s ({user:.2f} user + {sys_s:.2f} sys) beside {wall:.2f} s wall: "
      f"{1000 * cpu / requests:.3f} ms a request")
PY
