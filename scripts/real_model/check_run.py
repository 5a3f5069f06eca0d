"""What a run against the real model showed, and whether the harness
held: every request answered (no trial lost), every answered attempt's
reply in the session log, no stream that showed nothing of a reply
charged to the model. Prints per model: requests, attempts reached,
p50 model time, tokens; and toolgauge's own CPU per request where the
run's RUN_FOLDER.time ("wall user system") is there; with --arms N,
that the run had N arms, and each arm's recovery after its first errors.
Usage: check_run.py RUN_FOLDER [--server-losses] [--arms N]"""

import collections
import csv
import json
import statistics
import sys

LOST = ("transport_error", "bad_response", "tool_unavailable")
# Lost to the server (it refused or garbled the request), not toolgauge.
SERVERS = ("transport_error", "bad_response")


def main():
    out = sys.argv[1]
    # --server-losses: the server may refuse some requests (llama.cpp's
    # refuses a tool schema whose pattern is not anchored): reported, and
    # only losses of toolgauge's own (a tool that could not run) fail.
    server_losses = "--server-losses" in sys.argv[2:]
    args = sys.argv[2:]
    arms = int(args[args.index("--arms") + 1]) if "--arms" in args else None
    rows = list(csv.DictReader(open(f"{out}/trials.csv")))
    assert rows, "no attempt was recorded"
    replies = collections.Counter()
    try:
        for line in open(f"{out}/session.jsonl"):
            if '"model_reply"' in line:
                replies[json.loads(line)["model"]] += 1
    except FileNotFoundError:
        replies = None
    by_model = collections.defaultdict(list)
    for row in rows:
        by_model[row["model"]].append(row)
    try:
        wall, user, system = map(float, open(f"{out.rstrip('/')}.time").read().split()[-3:])
        print(
            f"toolgauge: {wall:.0f} s wall, {user + system:.2f} s CPU for {len(rows)} requests "
            f"({1000 * (user + system) / len(rows):.1f} ms CPU per request)"
        )
    except (FileNotFoundError, ValueError):
        pass
    for model, attempts in sorted(by_model.items()):
        lost = [r for r in attempts if r["failures"] in LOST]
        if lost:
            print(f"  lost: {[(r['scenario'], r['failures']) for r in lost]}")
        ours = [r for r in lost if not (server_losses and r["failures"] in SERVERS)]
        assert not ours, f"{model}: lost attempts: {[(r['scenario'], r['failures']) for r in ours]}"
        ms = sorted(float(r["model_ms"]) for r in attempts)
        reached = sorted({int(r["attempt"]) for r in attempts})
        print(
            f"{model}: {len(attempts)} requests, attempts reached {reached}, "
            f"model_ms p50 {statistics.median(ms):.0f} max {ms[-1]:.0f}, tokens "
            f"{sum(int(r['input_tokens']) for r in attempts)} in "
            f"{sum(int(r['output_tokens']) for r in attempts)} out"
        )
        if replies is not None:
            # A request the server never answered has no reply to log.
            answered = [r for r in attempts if r["failures"] != "transport_error"]
            assert replies[model] == len(answered), (
                f"{model}: {len(answered)} answered attempts, {replies[model]} model_reply entries"
            )
        streamed = [r for r in attempts if r["first_byte_ms"] != ""]
        if streamed:
            silent = [r for r in streamed if r["first_token_ms"] == "" and r["failures"] not in ("", "no_call")]
            print(f"  streamed: {len(streamed)}, calls run early: {sum(int(r['ran_early']) for r in attempts)}")
            charged = [r for r in silent if r["calls"] == "0" and r["failures"] != "no_call"]
            assert not charged, f"charged to the model with nothing of a reply: {charged[:3]}"
    if arms is not None:
        assert len(by_model) == arms, f"{len(by_model)} arms ran, not {arms}: {sorted(by_model)}"
        for row in csv.DictReader(open(f"{out}/self_correction.csv")):
            if row["failure_kind"] == "all":
                print(
                    f"{row['model']}: {row['error_class']} errors first in {row['first_errors']} trial(s): "
                    f"fixed at the next attempt {row['fixed_next']}/{row['with_next']}, "
                    f"the same call again {row['same_call']}, text instead {row['text_instead']}, "
                    f"recovered later {row['recovered_later']}"
                )


if __name__ == "__main__":
    main()
