"""A published BFCL multi-turn run re-scored by BFCL's own checker and by
toolgauge (its bfcl-results model replaying each step through the bridge,
on BFCL's own classes), entry by entry.

    VENV/bin/python tests/bfcl_oracle/published_multi_turn.py RESULTS [CORPORA] [TOOLGAUGE]

RESULTS is a folder holding `BFCL_v4_multi_turn_<category>_result.json`
files of one function-calling model (e.g. bbrowning/bfcl-vllm-results'
`result/openai_gpt-oss-120b/multi_turn`). VENV is the bridge's (see
docs/bfcl.md). Nothing here is committed: the published files are read
where they are. Prints the agreement per category and every entry where the
verdicts differ, with BFCL's error type.
"""

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bfcl_eval.eval_checker.eval_runner import _evaluate_single_multi_turn_entry
from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

sys.path.insert(0, str(Path(__file__).resolve().parent))
from multi_turn import FunctionCallingHandler  # noqa: E402

CATEGORIES = ["base", "miss_func", "miss_param", "long_context"]
ROOT = Path(__file__).resolve().parents[2]


def bfcl_verdicts(results, category):
    entries = {e["id"]: e for e in load_dataset_entry(category)}
    answers = {a["id"]: a for a in load_ground_truth_entry(category)}
    verdicts = {}
    for row in results:
        entry = entries[row["id"]]
        verdict = _evaluate_single_multi_turn_entry(
            FunctionCallingHandler(), row["id"], json.loads(json.dumps(row["result"])),
            answers[row["id"]]["ground_truth"], dict(entry), "published", category,
        )
        error = None if verdict["valid"] else verdict["error"]["error_type"]
        verdicts[row["id"]] = (verdict["valid"], error)
    return verdicts


def main():
    results_dir = Path(sys.argv[1])
    corpora = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT.parent / "shared" / "corpora"
    toolgauge = sys.argv[3] if len(sys.argv) > 3 else str(ROOT / "target" / "release" / "toolgauge")
    work = Path(tempfile.mkdtemp(prefix="published-multi-turn-"))
    theirs, rows = {}, []
    for short in CATEGORIES:
        category = f"multi_turn_{short}"
        path = results_dir / f"BFCL_v4_{category}_result.json"
        if not path.exists():
            continue
        results = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        rows.extend(results)
        for id_, verdict in bfcl_verdicts(results, category).items():
            theirs[id_] = (category, *verdict)
        subprocess.run(
            [toolgauge, "import", "bfcl", str(corpora / "bfcl" / f"BFCL_v4_{category}.json"),
             "--out", str(work / "suite"), "--bridge",
             f"{sys.executable} {ROOT / 'scripts' / 'bfcl_bridge' / 'bridge.py'}"],
            check=True, capture_output=True,
        )
    answered = {row["id"] for row in rows}
    for scenario in (work / "suite").iterdir():
        if scenario.stem not in answered:
            scenario.unlink()
    (work / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = {"name": "published", "kind": "bfcl-results", "results": str(work / "results.jsonl")}
    (work / "published.json").write_text(json.dumps(model))
    subprocess.run(
        [toolgauge, "run", str(work / "suite"), "--models", str(work / "published.json"),
         "--trials", "1", "--concurrency", "16", "--no-session", "--quiet", "--out", str(work / "out")],
        capture_output=True,
    )
    ours = {}
    lost_kinds = {"transport_error", "bad_response", "tool_unavailable", "user_simulator"}
    with open(work / "out" / "trials.csv") as f:
        for row in csv.DictReader(f):
            # A trial lost to infrastructure (a bridge that did not start
            # on a loaded machine) is no verdict: named as lost, not False.
            lost = any(kind in lost_kinds for kind in row["failures"].split(";"))
            ours[row["scenario"]] = "lost" if lost else row["trial_success"] == "true"
    agree, total, differ = {}, {}, []
    for id_, (category, valid, error) in sorted(theirs.items()):
        total[category] = total.get(category, 0) + 1
        if ours.get(id_) == valid:
            agree[category] = agree.get(category, 0) + 1
        else:
            differ.append(f"{id_}: bfcl={valid} ({error}) toolgauge={ours.get(id_)}")
    for category in total:
        print(f"{category}: {agree.get(category, 0)}/{total[category]} agree; "
              f"BFCL valid {sum(1 for c, v, _ in theirs.values() if c == category and v)}")
    print("\n".join(differ) if differ else "every verdict agrees")
    print(f"(work folder: {work})")


if __name__ == "__main__":
    main()
