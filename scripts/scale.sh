#!/usr/bin/env bash
# Scaling figures for reports/bench.md, each measured side by side in one
# run (shared machines are noisy; compare ratios, not absolute times):
#   1. throughput (trials/s) of the starter suite at 100 and at 10,000
#      trials per model x scenario;
#   2. wall time and peak RSS of `run` over N generated scenarios
#      (default 10,000) x the 4 mock models x 1 trial.
# Usage: scripts/scale.sh [N] [BINARY]   (run from the repository root)
set -euo pipefail
scenarios=${1:-10000}
bin=${2:-target/release/toolgauge}
[ -x "$bin" ] || cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # label, then the command; prints label, seconds, peak RSS
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null
    read -r seconds kb < "$work/time"
    echo "$label: ${seconds} s, peak RSS $((kb / 1024)) MiB"
}

seconds() { cut -d' ' -f1 "$work/time"; }

echo "== throughput: starter suite, 4 models"
for trials in 100 10000; do
    measure "--trials $trials" "$bin" run scenarios/starter --trials "$trials" --quiet \
        --out "$work/starter-$trials"
    jobs=$(( trials * 35 * 4 ))
    awk -v jobs="$jobs" -v s="$(seconds)" 'BEGIN { printf "  %d trials: %.0f trials/s\n", jobs, jobs / s }'
    du -h "$work/starter-$trials/pass_k.csv" | cut -f1 | sed 's/^/  pass_k.csv: /'
    rm -rf "$work/starter-$trials"
done

echo "== $scenarios generated scenarios x 4 models x 1 trial"
suite="$work/generated"
mkdir -p "$suite"
files=(scenarios/starter/*.json)
for ((i = 0; i < scenarios; i++)); do
    file=${files[i % ${#files[@]}]}
    name=$(basename "$file" .json)
    sed "s/\"name\": \"$name\"/\"name\": \"${name}_$i\"/" "$file" > "$suite/${name}_$i.json"
done
measure "run" "$bin" run "$suite" --models scenarios/models --trials 1 --quiet --out "$work/generated-out"
echo "  summary rows: $(( $(wc -l < "$work/generated-out/summary.csv") - 1 ))"
