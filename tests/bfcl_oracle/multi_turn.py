"""BFCL's own multi-turn checker as the oracle for toolgauge's verdicts on
BFCL's multi-turn entries.

Generates multi-turn outputs (BFCL's function-calling result format: per
turn, per step, a list of {function: "<json arguments>"}, a text step ending
each turn) from the ground truth of the four multi-turn categories and from
mistakes made on it, scores each with BFCL's own entry evaluation (the
runner's `_evaluate_single_multi_turn_entry`: force-termination, decoding,
`multi_turn_checker`), and writes them as test data:

    tests/fixtures/bfcl_multi_turn/<variant>.jsonl   one result per entry
    tests/fixtures/bfcl_multi_turn/verdicts.jsonl    BFCL's verdict on each,
        and on a failure its error type

The variants: `truth` (the ground truth, a call per step), `drop_last`
(a turn's last call left out), `empty_turn` (a turn with calls answered
with text only), `wrong_value` (a string argument changed), `repeat` (a
call made twice), `cut_short` (the last turn never recorded, as when BFCL
forces a model to quit), `undecodable_beside` (a turn's last call shares
its step with a call whose arguments are not JSON, as gpt-oss-20b's
`multi_turn_miss_func_44` did in a published run: BFCL's checker skips the
whole step, the good call with it).

toolgauge replays them as a `bfcl-results` model on the imported entries,
through the bridge (tests/integration/bfcl_multi_turn.rs), and must give the
same verdict on each. Run with the checker's virtual environment:

    VENV/bin/python tests/bfcl_oracle/multi_turn.py

With `--check`, it writes nothing and fails unless the committed data is
exactly what BFCL's checker gives now (.ci/run runs this).
"""

import json
import random
import sys
from pathlib import Path

from bfcl_eval.eval_checker.eval_runner import _evaluate_single_multi_turn_entry
from bfcl_eval.model_handler.utils import convert_to_function_call
from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
)

CATEGORIES = [
    "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
    "multi_turn_long_context",
]
PER_CATEGORY = 10
VARIANTS = [
    "truth", "drop_last", "empty_turn", "wrong_value", "repeat", "cut_short",
    "undecodable_beside",
]
OUT = Path(__file__).resolve().parents[1] / "fixtures" / "bfcl_multi_turn"
TEXT_STEP = "Done."


class FunctionCallingHandler:
    """What the runner asks of a handler: decoding, as FC handlers do."""

    def decode_execute(self, result, has_tool_call_tag):
        return convert_to_function_call(result)


def as_steps(calls):
    """Ground-truth call texts as FC steps: one call per step, then text."""
    steps = []
    for text in calls:
        steps.append([{name: json.dumps(arguments)} for name, arguments in [parse(text)]])
    steps.append(TEXT_STEP)
    return steps


def parse(text):
    """A ground-truth call's name and arguments, positional ones named as
    BFCL's own execution binds them (by the method's signature)."""
    import ast
    import inspect

    call = ast.parse(text, mode="eval").body
    name = call.func.id
    arguments = {}
    if call.args:
        method = METHODS[name]
        parameters = [p for p in inspect.signature(method).parameters]
        for index, value in enumerate(call.args):
            arguments[parameters[index]] = ast.literal_eval(value)
    for keyword in call.keywords:
        arguments[keyword.arg] = ast.literal_eval(keyword.value)
    return name, arguments


METHODS = {}


def load_methods(entry):
    _, instances = execute_multi_turn_func_call(
        [], entry["initial_config"], entry["involved_classes"], "oracle_methods",
        entry["id"], long_context=False,
    )
    for instance in instances.values():
        for name in dir(instance):
            if not name.startswith("_"):
                METHODS[name] = getattr(instance, name)


def variant(name, ground_truth, rng):
    turns = [as_steps(calls) for calls in ground_truth]
    with_calls = [k for k, calls in enumerate(ground_truth) if calls]
    if name == "truth" or not with_calls:
        return turns
    k = rng.choice(with_calls)
    if name == "drop_last":
        del turns[k][-2]
    elif name == "empty_turn":
        turns[k] = [TEXT_STEP]
    elif name == "wrong_value":
        for step in turns[k][:-1]:
            (function, arguments), = step[0].items()
            arguments = json.loads(arguments)
            strings = [key for key, value in arguments.items() if isinstance(value, str)]
            if strings:
                arguments[strings[0]] += "_x"
                step[0] = {function: json.dumps(arguments)}
                break
    elif name == "repeat":
        turns[k].insert(-1, turns[k][-2])
    elif name == "cut_short":
        turns = turns[:-1]
    elif name == "undecodable_beside":
        turns[k][-2] = [{"echo<|channel|>": "We need to write the answer."}] + turns[k][-2]
    return turns


def generate():
    handler = FunctionCallingHandler()
    results = {v: [] for v in VARIANTS}
    verdicts = []
    for category in CATEGORIES:
        entries = {e["id"]: e for e in load_dataset_entry(category)}
        answers = load_ground_truth_entry(category)[:PER_CATEGORY]
        for answer in answers:
            entry = entries[answer["id"]]
            load_methods(entry)
            for name in VARIANTS:
                rng = random.Random(f"{entry['id']}:{name}")
                turns = variant(name, answer["ground_truth"], rng)
                results[name].append({"id": entry["id"], "result": turns})
                verdict = _evaluate_single_multi_turn_entry(
                    handler, entry["id"], json.loads(json.dumps(turns)),
                    answer["ground_truth"], dict(entry), f"oracle_{name}", category,
                )
                row = {"id": entry["id"], "variant": name, "valid": verdict["valid"]}
                if not verdict["valid"]:
                    row["error_type"] = verdict["error"]["error_type"]
                verdicts.append(row)
    files = {f"{name}.jsonl": rows for name, rows in results.items()}
    files["verdicts.jsonl"] = verdicts
    return {
        name: "".join(json.dumps(row) + "\n" for row in rows) for name, rows in files.items()
    }


def main():
    files = generate()
    if "--check" in sys.argv:
        stale = [n for n, text in files.items() if (OUT / n).read_text() != text]
        if stale:
            sys.exit(f"BFCL's checker now says otherwise: {', '.join(stale)} (run without --check)")
        print(f"{len(files)} files agree with BFCL's multi-turn checker")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text)
    valid = sum(json.loads(line)["valid"] for line in files["verdicts.jsonl"].splitlines())
    total = len(files["verdicts.jsonl"].splitlines())
    print(f"{total} outputs written to {OUT}, {valid} valid by BFCL's checker")


if __name__ == "__main__":
    main()
