"""Published BFCL runs re-scored by BFCL's own checker and by toolgauge,
entry by entry: the agreement per category and mode (FC or prompting),
on verdicts and on the reasons of failures.

    .venv-bfcl/bin/python tests/bfcl_oracle/published.py RESULTS [CORPORA] [TOOLGAUGE]

RESULTS is a folder with one folder per model, each holding result files:
`BFCL_v4_<category>_result.json` (ids as in BFCL v4), or the older
`gorilla_openfunctions_v1_test_<category>_result.json` (`simple_3`,
`java_3`, `parallel_function_3`..., mapped to their v4 ids). A model whose
name has `-FC` recorded function calls; any other prompted call syntax.
Only result files that answer every entry of a category are used.
Nothing here is committed: the published files are read where they are.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oracle  # noqa: E402

# What a result file records of each entry besides its output.
RECORDED = ("latency", "input_token_count", "output_token_count")

# Older category names and their v4 ones (the v1 "relevance" is v4's irrelevance).
V1_CATEGORIES = {
    "simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript",
    "multiple_function": "multiple", "parallel_function": "parallel",
    "parallel_multiple_function": "parallel_multiple", "relevance": "irrelevance",
}


def result_files(model_dir):
    """(v4 category, path, id mapping) for each result file of a model."""
    for category in oracle.CATEGORIES:
        path = model_dir / f"BFCL_v4_{category}_result.json"
        if path.exists():
            yield category, path, lambda i: i
    for old, category in V1_CATEGORIES.items():
        path = model_dir / f"gorilla_openfunctions_v1_test_{old}_result.json"
        if path.exists():
            yield category, path, lambda i, c=category: f"{c}_{i.rsplit('_', 1)[-1]}"


def bfcl_fc_verdict(category, entry, answer, result):
    """BFCL's verdict on recorded calls: arguments as JSON text (most
    handlers) or as objects (handlers that record them so, as Cohere's)."""
    if isinstance(result, list) and any(
        isinstance(c, dict) and c and isinstance(next(iter(c.values())), dict) for c in result
    ):
        try:
            decoded = [
                {name: json.loads(args) if isinstance(args, str) else args}
                for call in result
                for name, args in call.items()
            ]
        except Exception:
            decoded = None
        return oracle.judge(category, entry, answer, decoded, oracle.MODEL)
    return oracle.bfcl_verdict(category, entry, answer, result)


def reason_words(error_type):
    """BFCL's error type in toolgauge's coarser reasons (as bfcl_oracle.rs)."""
    if error_type.startswith("ast_decoder:"):
        return "decoder_failed"
    if error_type in ("value_error:list/tuple", "value_error:list_dict_count"):
        return "value_error:list"
    if error_type.startswith("value_error:dict"):
        return "value_error:dict"
    if error_type.startswith("type_error:"):
        return "type_error"
    if error_type.startswith("value_error:"):
        return error_type
    return error_type.rsplit(":", 1)[-1]


def main(results, corpora, toolgauge):
    results, corpora = Path(results), Path(corpora)
    # TOOLGAUGE_BFCL_WORK keeps the suites, model files and outputs (to
    # time the runs again: scripts/bfcl-rescore.sh).
    kept = os.environ.get("TOOLGAUGE_BFCL_WORK")
    work = Path(kept) if kept else Path(tempfile.mkdtemp(prefix="bfcl-published-"))
    theirs = []
    runs = defaultdict(list)
    for model_dir in sorted(p for p in results.iterdir() if p.is_dir()):
        model, fc = model_dir.name, "-FC" in model_dir.name
        for category, path, v4_id in result_files(model_dir):
            entries = {e["id"]: e for e in oracle.read_jsonl(corpora / f"BFCL_v4_{category}.json")}
            answer_path = corpora / "possible_answer" / f"BFCL_v4_{category}.json"
            answers = {a["id"]: a for a in oracle.read_jsonl(answer_path)} if answer_path.exists() else {}
            # The oldest files number their entries (`idx`, or a bare number).
            records = {
                v4_id(str(r["id"] if "id" in r else r["idx"])): r
                for r in oracle.read_jsonl(path)
            }
            rows = {i: r["result"] for i, r in records.items()}
            if set(rows) != set(entries) or (not fc and not all(isinstance(r, str) for r in rows.values())):
                continue
            models = work / "models" / category
            models.mkdir(parents=True, exist_ok=True)
            with open(models / f"{model}.jsonl", "w") as f:
                for i, result in rows.items():
                    # The recorded latency and tokens go with the result.
                    kept = {k: records[i][k] for k in RECORDED if records[i].get(k) is not None}
                    f.write(json.dumps({"id": i, "result": result, **kept}) + "\n")
            spec = {"name": model, "kind": "bfcl-results", "results": str(models / f"{model}.jsonl")}
            if not fc:
                spec["results_format"] = "prompt"
            (models / f"{model}.json").write_text(json.dumps(spec))
            runs[category].append(model)
            for i, result in rows.items():
                entry, answer = entries[i], answers.get(i)
                if fc:
                    verdict = bfcl_fc_verdict(category, entry, answer, result)
                else:
                    verdict = oracle.bfcl_prompt_verdict(category, entry, answer, result)
                theirs.append((category, "FC" if fc else "prompt", model, i, verdict))
    ours = {}
    run_seconds = 0.0
    for category in runs:
        suite = work / "suite" / category
        subprocess.run(
            [toolgauge, "import", "bfcl", str(corpora / f"BFCL_v4_{category}.json"), "--out", str(suite)],
            check=True, capture_output=True,
        )
        out = work / "out" / category
        started = time.monotonic()
        run = subprocess.run(
            [toolgauge, "run", str(suite), "--models", str(work / "models" / category),
             "--trials", "1", "--no-session", "--quiet", "--out", str(out)],
            capture_output=True, text=True,
        )
        run_seconds += time.monotonic() - started
        if run.returncode not in (0, 1):
            sys.exit(f"toolgauge run failed on {category}: {run.stderr[-400:]}")
        with open(out / "trials.csv") as f:
            for row in csv.DictReader(f):
                ours[(row["model"], row["scenario"])] = row
    tally = defaultdict(lambda: [0, 0, 0, 0])
    differences = []
    for category, mode, model, i, verdict in theirs:
        row = ours[(model, i)]
        t = tally[(category, mode)]
        t[0] += 1
        mine = row["trial_success"] == "true"
        t[1] += mine == verdict["valid"]
        if mine != verdict["valid"]:
            differences.append(f"{model} {i}: bfcl={verdict} toolgauge={mine} {row['reason']}")
        if "error_type" in verdict:
            t[2] += 1
            error_type = verdict["error_type"]
            names_none = error_type.startswith("value_error:dict") or error_type == "value_error:list_dict_count"
            same_parameter = names_none or (verdict["parameter"] or "") == row["reason_parameter"]
            if reason_words(error_type) == row["reason"] and same_parameter:
                t[3] += 1
            elif mine == verdict["valid"]:
                differences.append(f"{model} {i}: bfcl={verdict} toolgauge={row['reason']} {row['reason_parameter']!r}")
    print("| category | mode | outputs | same verdict | failures | same reason |")
    print("|---|---|---:|---:|---:|---:|")
    total = [0, 0, 0, 0]
    for (category, mode), t in sorted(tally.items()):
        total = [a + b for a, b in zip(total, t)]
        print(f"| {category} | {mode} | {t[0]} | {t[1]} | {t[2]} | {t[3]} |")
    print(f"| all | | {total[0]} | {total[1]} | {total[2]} | {total[3]} |")
    print(f"toolgauge's {len(runs)} runs: {run_seconds:.2f} s wall")
    for d in differences[:40]:
        print(d)
    return 1 if differences else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    args = sys.argv[1:] + [None, None]
    sys.exit(main(
        args[0],
        args[1] or "../shared/corpora/bfcl",
        args[2] or str(Path(__file__).resolve().parents[2] / "target/release/toolgauge"),
    ))
