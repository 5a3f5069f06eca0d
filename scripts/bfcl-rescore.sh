#!/usr/bin/env bash
# Time toolgauge's re-scoring of the published BFCL outputs: the seven
# `toolgauge run`s of tests/bfcl_oracle/published.py (one per category, all
# models at once), ROUNDS times, with the release binary. Prints each
# round's wall and CPU seconds.
#
#   TOOLGAUGE_BFCL_WORK=DIR VENV/bin/python tests/bfcl_oracle/published.py RESULTS
#   scripts/bfcl-rescore.sh DIR [ROUNDS] [TOOLGAUGE]
#
# The first command re-scores with BFCL's checker too and keeps in DIR
# the suites and model files it made; this one runs only toolgauge on them.
set -euo pipefail
work=${1:?usage: scripts/bfcl-rescore.sh DIR [ROUNDS] [TOOLGAUGE]}
rounds=${2:-3}
toolgauge=${3:-$(dirname "$0")/../target/release/toolgauge}
[ -d "$work/suite" ] || { echo "no suites in $work: run published.py with TOOLGAUGE_BFCL_WORK=$work first" >&2; exit 2; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  start=$(date +%s.%N)
  cpu=0
  for suite in "$work"/suite/*; do
    category=$(basename "$suite")
    times=$(mktemp)
    /usr/bin/time -f "%U %S" -o "$times" "$toolgauge" run "$suite" --models "$work/models/$category" \
      --trials 1 --no-session --quiet --force --out "$work/out/$category" >/dev/null 2>&1 || [ $? -eq 1 ]
    cpu=$(awk -v c="$cpu" '{ print c + $1 + $2 }' "$times")
    rm -f "$times"
  done
  end=$(date +%s.%N)
  awk -v r="$round" -v s="$start" -v e="$end" -v c="$cpu" \
    'BEGIN { printf "round %d: %.2f s wall, %.2f s CPU\n", r, e - s, c }'
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
