#!/usr/bin/env bash
# Instruction counts of the hot paths (benches/counts.rs), held to the
# committed baseline benches/counts.baseline: a count more than 5% over its
# line fails (gungraun exits 3).
#
#   scripts/counts.sh            run and check against the baseline
#   scripts/counts.sh --update   measure and rewrite the baseline (commit it
#                                with the change that moved the counts, and
#                                say why in the commit)
#
# Needs valgrind (Debian's package) and gungraun-runner of the same version
# as the gungraun crate in Cargo.lock; the runner is installed once into
# ~/.cache/toolgauge (override with GUNGRAUN_RUNNER).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=check
case "${1:-}" in
  "") ;;
  --update) mode=update ;;
  *) echo "usage: scripts/counts.sh [--update]" >&2; exit 2 ;;
esac

if ! command -v valgrind >/dev/null; then
  echo "counts: valgrind is not installed (apt-get install valgrind)" >&2
  exit 2
fi

if [ -z "${GUNGRAUN_RUNNER:-}" ]; then
  version=$(awk '/^name = "gungraun"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
  if [ -z "$version" ]; then
    echo "counts: Cargo.lock names no gungraun version" >&2
    exit 2
  fi
  root="$HOME/.cache/toolgauge/gungraun-runner-$version"
  if [ ! -x "$root/bin/gungraun-runner" ]; then
    echo "counts: installing gungraun-runner $version into $root"
    cargo install --quiet --locked --version "$version" --root "$root" gungraun-runner
  fi
  export GUNGRAUN_RUNNER="$root/bin/gungraun-runner"
fi

if [ "$mode" = check ]; then
  exec cargo bench --quiet --bench counts
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
TOOLGAUGE_COUNTS_UPDATE=1 cargo bench --quiet --bench counts -- --output-format=json >"$out"
python3 - "$out" benches/counts.baseline <<'PY'
import json, sys

summary, baseline = sys.argv[1], sys.argv[2]
old = {}
for line in open(baseline):
    if line.strip() and not line.startswith("#"):
        name, count = line.split()
        old[name] = int(count)
new = {}
for line in open(summary):
    bench = json.loads(line)
    key = bench["group"].removesuffix("_group") + "/" + bench["id"]
    new[key] = bench["profiles"][0]["data"]["total"]["metrics"]["Ir"]["values"]["new"]
with open(baseline, "w") as f:
    f.write("# Instructions (callgrind Ir) per bench of benches/counts.rs, written by\n")
    f.write("# scripts/counts.sh --update. CI fails when a count grows past its line + 5%.\n")
    for key in sorted(new):
        f.write(f"{key} {new[key]}\n")
for key in sorted(new):
    before = old.get(key)
    change = "new" if before is None else f"{(new[key] - before) / before * 100:+.1f}%"
    print(f"{key:34} {new[key]:>12,} {change:>8}")
for key in sorted(set(old) - set(new)):
    print(f"{key:34} {'gone':>12}")
PY
