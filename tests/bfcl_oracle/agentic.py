"""Outputs of agentic entries (web search, memory) and BFCL's own verdict
on each, for toolgauge's replay (the `bfcl-results` model) to be held to.

    VENV/bin/python tests/bfcl_oracle/agentic.py OUT_DIR [--entries N] [--memory]

For the first N web search questions, in both categories (with and
without snippets), or with --memory the first N memory questions on the
kv and rec_sum backends (each variant's file then answers every
prerequisite conversation of their scenarios too, a text per turn, as
BFCL's `*_prereq_result.json` would), writes one result file per variant
of output, in BFCL's
function-calling result format (`{"id", "result": [[step, ...]]}`, a step
a list of `{name: json arguments}` or a text), and `verdicts.jsonl`: BFCL's
`_evaluate_single_agentic_entry` on each (valid, error type). The
variants: the answer alone; a search, then the answer; a wrong answer; the
answer, then a search (BFCL reads the last text); a wrong text, then the
right one; calls and no text; the answer with its punctuation and case
changed (BFCL's checker ignores them).
"""

import argparse
import json
from pathlib import Path

from bfcl_eval.eval_checker.eval_runner import _evaluate_single_agentic_entry
from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

from multi_turn import FunctionCallingHandler

# A call that reads, per category: what a model looks up before answering.
LOOKUP = {
    "web_search_base": [{"search_engine_query": json.dumps({"keywords": "who knows"})}],
    "web_search_no_snippet": [{"search_engine_query": json.dumps({"keywords": "who knows"})}],
    "memory_kv": [{"core_memory_retrieve_all": json.dumps({})}],
    "memory_rec_sum": [{"memory_retrieve": json.dumps({})}],
}


def said(answer):
    return f"{{'answer': '{answer}', 'context': 'generated'}}"


def variants(truth, category):
    SEARCH = LOOKUP[category]
    right = said(truth)
    return {
        "answer": [right],
        "search_then_answer": [SEARCH, right],
        "wrong": [said("Nobody In Particular")],
        "answer_then_search": [right, SEARCH],
        "wrong_then_right": [said("Nobody In Particular"), right],
        "calls_only": [SEARCH],
        "punctuation": [said(truth.upper().replace(" ", " - ") + ".")],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--entries", type=int, default=10)
    parser.add_argument("--memory", action="store_true", help="memory questions, not web search")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    files, verdicts = {}, []
    categories = ("memory_kv", "memory_rec_sum") if args.memory else ("web_search_base", "web_search_no_snippet")
    for category in categories:
        stored = "memory" if args.memory else "web_search"
        everything = load_dataset_entry(category, include_prereq=True)
        entries = [e for e in everything if "prereq" not in e["id"]][: args.entries]
        answers = {a["id"]: a for a in load_ground_truth_entry(category if args.memory else stored)}
        scenarios = {e.get("scenario") for e in entries}
        # The prerequisites of the questions' scenarios, each turn answered.
        prerequisites = [
            {"id": e["id"], "result": [["Noted."] for _ in e["question"]]}
            for e in everything
            if "prereq" in e["id"] and e.get("scenario") in scenarios
        ]
        for entry in entries:
            truth = answers[entry["id"].replace(category, stored, 1)]["ground_truth"]
            for variant, steps in variants(truth[0], category).items():
                if variant not in files:
                    files[variant] = []
                if prerequisites and not any(l["id"] == prerequisites[0]["id"] for l in files[variant]):
                    files[variant].extend(prerequisites)
                result = [steps]
                files.setdefault(variant, []).append({"id": entry["id"], "result": result})
                verdict = _evaluate_single_agentic_entry(
                    FunctionCallingHandler(), entry["id"], json.loads(json.dumps(result)),
                    truth, dict(entry), "generated", category,
                )
                verdicts.append({
                    "id": entry["id"],
                    "variant": variant,
                    "valid": verdict["valid"],
                    "error_type": (verdict.get("error") or {}).get("error_type"),
                })
    for variant, lines in files.items():
        (args.out / f"{variant}.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    (args.out / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    print(f"{len(verdicts)} outputs, {sum(v['valid'] for v in verdicts)} valid by BFCL")


if __name__ == "__main__":
    main()
