"""BFCL's own loop on one multi-turn entry, the ground truth as the model:
the baseline of scripts/bfcl_bridge/overhead.sh.

Per trial, as BFCL's inference and evaluation do it: fresh instances, each
turn's ground-truth calls run one step at a time by
`execute_multi_turn_func_call`, then the entry judged by the runner's
`_evaluate_single_multi_turn_entry`. No model, no network: what is left is
BFCL's own per-trial cost. Prints the trials' mean wall time in
milliseconds.

    VENV/bin/python scripts/bfcl_bridge/bfcl_loop.py ENTRY_ID TRIALS
"""

import json
import sys
import time

from bfcl_eval.eval_checker.eval_runner import _evaluate_single_multi_turn_entry
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
)
from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry


def trial(entry, ground_truth, name, category):
    long_context = "long_context" in category
    turns = []
    for calls in ground_truth:
        steps = []
        for call in calls:
            execute_multi_turn_func_call(
                [call], entry["initial_config"], entry["involved_classes"], name,
                entry["id"], long_context=long_context,
            )
            steps.append(call)
        turns.append(steps + ["Done."])
    # The result file's form for a prompting run: each step its call text.
    result = [[[call] if call != "Done." else call for call in steps] for steps in turns]
    verdict = _evaluate_single_multi_turn_entry(
        PromptHandler(), entry["id"], result, ground_truth, dict(entry), name, category,
    )
    assert verdict["valid"], verdict


class PromptHandler:
    """Steps are call texts already: decoding is the identity."""

    def decode_execute(self, result, has_tool_call_tag):
        if isinstance(result, str):
            raise ValueError("text")
        return result


def main():
    entry_id, trials = sys.argv[1], int(sys.argv[2])
    category = entry_id.rsplit("_", 1)[0]
    entry = next(e for e in load_dataset_entry(category) if e["id"] == entry_id)
    answer = next(a for a in load_ground_truth_entry(category) if a["id"] == entry_id)
    started = time.perf_counter()
    for i in range(trials):
        trial(entry, answer["ground_truth"], f"bench_{i}", category)
    elapsed = time.perf_counter() - started
    print(json.dumps({"entry": entry_id, "trials": trials, "ms_per_trial": 1000 * elapsed / trials}))


if __name__ == "__main__":
    main()
