"""BFCL's own leaderboard tables of the accuracies `toolgauge report bfcl`
read from a run, to hold toolgauge's tables to.

    VENV/bin/python tests/bfcl_oracle/tables.py RUN_DIR

RUN_DIR holds what `toolgauge report bfcl` wrote: bfcl_scores.json (each
model's accuracy and count per category) and the six data_*.csv. The
scores go to BFCL's `generate_leaderboard_csv`
(bfcl_eval/eval_checker/eval_runner_helper.py) as BFCL's evaluation
would hand them over, each model under a name BFCL's model table knows
(which only names, links and prices it), into a folder of its own; then
every table is compared cell by cell with toolgauge's. The columns BFCL
fills from its model table or its cost and latency records (model, link,
cost, latency, organisation, licence) are left out; every accuracy, rank
and "N/A" must be the same. Prints what differs and exits 1 if anything
does.
"""

import csv
import json
import sys
import tempfile
from pathlib import Path

from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.eval_checker.eval_runner_helper import generate_leaderboard_csv

TABLES = [
    "data_overall.csv",
    "data_non_live.csv",
    "data_live.csv",
    "data_multi_turn.csv",
    "data_agentic.csv",
    "data_format_sensitivity.csv",
]
# Filled from BFCL's model table and its cost and latency records.
NOT_COMPARED = {
    "Model",
    "Model Link",
    "Total Cost ($)",
    "Latency Mean (s)",
    "Latency Standard Deviation (s)",
    "Latency 95th Percentile (s)",
    "Organization",
    "License",
}


def stand_ins(count):
    """Names BFCL's model table knows, as its leaderboard keys them."""
    names = [name for name in MODEL_CONFIG_MAPPING if "_" not in name]
    return [name.replace("/", "_") for name in names[:count]]


def read(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def main():
    run = Path(sys.argv[1])
    scores = json.loads((run / "bfcl_scores.json").read_text())
    names = stand_ins(len(scores))
    table = {}
    for name, model in zip(names, scores):
        table[name] = {
            category: {"accuracy": s["accuracy"], "total_count": s["total_count"]}
            for category, s in model["categories"].items()
        }
    differences = []
    with tempfile.TemporaryDirectory() as out:
        generate_leaderboard_csv(table, Path(out))
        for name in TABLES:
            theirs, ours = read(Path(out) / name), read(run / name)
            if theirs[0] != ours[0]:
                differences.append(f"{name}: header {ours[0]} != BFCL's {theirs[0]}")
                continue
            if len(theirs) != len(ours):
                differences.append(f"{name}: {len(ours)} rows != BFCL's {len(theirs)}")
                continue
            header = theirs[0]
            for r, (their_row, our_row) in enumerate(zip(theirs[1:], ours[1:]), start=1):
                for column, theirs_cell, ours_cell in zip(header, their_row, our_row):
                    if column not in NOT_COMPARED and theirs_cell != ours_cell:
                        differences.append(
                            f"{name} row {r} {column!r}: toolgauge {ours_cell}, BFCL {theirs_cell}"
                        )
    for line in differences:
        print(line)
    cells = sum(1 for _ in scores)
    if differences:
        sys.exit(1)
    print(f"report bfcl: every table of {cells} model(s) is BFCL's own, cell for cell")


if __name__ == "__main__":
    main()
