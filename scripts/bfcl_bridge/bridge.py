"""BFCL's multi-turn API classes served over MCP (stdio), for toolgauge.

    bridge.py                 list every function of BFCL's multi-turn classes
    bridge.py --entry ID      serve entry ID: its classes loaded with the
                              entry's initial_config (long context too)

Started with a listening Unix socket as its stdin (toolgauge's `"forks":
true`, scripts/forking.py), the bridge imports BFCL and reads its
multi-turn data once, and forks a child for each connection, which serves
as above with the arguments the connection's first line gives
(`["--entry", "ID"]` or none): each trial's instances are its own.

Everything the model sees comes from the pinned `bfcl-eval` package, never a
port: the entry and its ground truth from BFCL's own data files, the tool
definitions as BFCL's function-calling handlers build them (`convert_to_tool`
over the docs with BFCL's Python hint), and every call run by BFCL's
`execute_multi_turn_func_call` on the entry's instances, its result text
(errors included, as "Error during execution: ...") the tool's result.

One more tool, `bfcl_check_turn` ({"turn": k}), is toolgauge's probe at the
end of each user turn and never shown to the model: it runs the ground
truth's turn k on instances of its own and answers BFCL's verdict on the turn
as `multi_turn_checker` gives it (empty turn, instance state, execution
results so far), as JSON: {"valid": true} or {"valid": false, "error_type",
"error_message"}.
"""

import argparse
import asyncio
import functools
import json
import sys
from pathlib import Path

import mcp.server.stdio
import mcp.types as types
from mcp.server.lowlevel import Server

from bfcl_eval.constants.enums import ModelStyle
from bfcl_eval.constants.eval_config import (
    MULTI_TURN_FUNC_DOC_PATH,
    POSSIBLE_ANSWER_PATH,
    PROMPT_PATH,
    VERSION_PREFIX,
)
from bfcl_eval.constants.executable_backend_config import (
    MULTI_TURN_FUNC_DOC_FILE_MAPPING,
)
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
    response_checker,
    state_checker,
)
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
)
from bfcl_eval.model_handler.utils import convert_to_tool
from bfcl_eval.utils import (
    _func_doc_language_specific_pre_processing,
    add_language_specific_hint_to_function_doc,
    load_file,
    populate_test_cases_with_predefined_functions,
)

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
import forking  # noqa: E402  (scripts/forking.py)

CHECK = "bfcl_check_turn"
MULTI_TURN_CLASSES = [
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
]
# The names BFCL's checker gives the two sides' instances.
MODEL = "toolgauge"
GROUND_TRUTH = "toolgauge_ground_truth"


def category_of(entry_id):
    return entry_id.rsplit("_", 1)[0]


def all_functions():
    docs = []
    for class_name in MULTI_TURN_CLASSES:
        path = MULTI_TURN_FUNC_DOC_PATH / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
        docs.extend(load_file(path))
    return _func_doc_language_specific_pre_processing(docs, "multi_turn_base")


def as_tools(functions):
    tools = []
    for tool in convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS):
        function = tool["function"]
        tools.append(
            types.Tool(
                name=function["name"],
                description=function.get("description", ""),
                inputSchema=function["parameters"],
            )
        )
    tools.append(
        types.Tool(
            name=CHECK,
            description="toolgauge's probe: BFCL's verdict on a user turn (never shown to the model).",
            inputSchema={
                "type": "object",
                "properties": {"turn": {"type": "integer", "minimum": 0}},
                "required": ["turn"],
            },
        )
    )
    return tools


@functools.cache
def data_file(path):
    """A BFCL data file as load_file reads it, read once per process."""
    return load_file(path)


def warm():
    """BFCL's multi-turn entries and answers read before forking, so that
    no trial reads them again (the package itself is imported already)."""
    for folder in (PROMPT_PATH, POSSIBLE_ANSWER_PATH):
        for path in sorted(folder.glob(f"{VERSION_PREFIX}_multi_turn_*.json")):
            data_file(path)


class Entry:
    """One entry's two sides: the model's instances and the ground truth's."""

    def __init__(self, entry_id):
        category = category_of(entry_id)
        name = f"{VERSION_PREFIX}_{category}.json"
        # As BFCL's load_dataset_entry and load_ground_truth_entry give a
        # multi-turn entry, for this one entry only (a trial's start-up).
        entries = [e for e in data_file(PROMPT_PATH / name) if e["id"] == entry_id]
        if not entries:
            raise SystemExit(f"bridge.py: no BFCL entry {entry_id!r} in {name}")
        entries = populate_test_cases_with_predefined_functions(entries)
        self.entry = add_language_specific_hint_to_function_doc(entries)[0]
        answers = [a for a in data_file(POSSIBLE_ANSWER_PATH / name) if a["id"] == entry_id]
        self.ground_truth = answers[0]["ground_truth"]
        self.long_context = "long_context" in category or "composite" in category
        functions = list(self.entry["function"])
        for held_out in self.entry.get("missed_function", {}).values():
            functions.extend(held_out)
        self.tools = as_tools(functions)
        self.results_so_far = []
        self.calls_this_turn = 0

    def execute(self, calls, side):
        return execute_multi_turn_func_call(
            func_call_list=calls,
            initial_config=self.entry["initial_config"],
            involved_classes=self.entry["involved_classes"],
            model_name=side,
            test_entry_id=self.entry["id"],
            long_context=self.long_context,
            is_evaL_run=True,
        )

    def call(self, name, arguments):
        # As BFCL's function-calling handlers decode a call (convert_to_function_call).
        text = f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"
        results, _ = self.execute([text], MODEL)
        self.calls_this_turn += 1
        self.results_so_far.extend(results)
        return results[0]

    def check_turn(self, turn):
        """multi_turn_checker's verdict on one turn, in its words."""
        if turn >= len(self.ground_truth):
            return {"valid": False, "error_type": "toolgauge:no_such_turn",
                    "error_message": f"the entry has {len(self.ground_truth)} turns"}
        expected = self.ground_truth[turn]
        made_calls = self.calls_this_turn > 0
        self.calls_this_turn = 0
        expected_results, truth = self.execute(expected, GROUND_TRUTH)
        if not expected:
            return {"valid": True}
        if not made_calls:
            return {"valid": False, "error_type": "multi_turn:empty_turn_model_response",
                    "error_message": f"Model response list is empty for turn {turn}"}
        _, model = self.execute([], MODEL)
        for verdict in (
            state_checker(model, truth),
            response_checker(self.results_so_far, expected_results, turn),
        ):
            if not verdict["valid"]:
                return {key: verdict[key] for key in ("valid", "error_type", "error_message")}
        return {"valid": True}


def serve(tools, entry):
    server = Server("bfcl-bridge")

    @server.list_tools()
    async def list_tools():
        return tools

    # BFCL runs whatever the model sends: no schema check here.
    @server.call_tool(validate_input=False)
    async def call_tool(name, arguments):
        if entry is None:
            raise ValueError("this bridge lists tools only: start it with --entry ID to run calls")
        if name == CHECK:
            text = json.dumps(entry.check_turn(int(arguments.get("turn", 0))))
        else:
            text = entry.call(name, arguments)
        return [types.TextContent(type="text", text=text)]

    async def run():
        async with mcp.server.stdio.stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    asyncio.run(run())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", help="a multi-turn entry id, e.g. multi_turn_base_0")
    forking.main(
        sys.argv[1:],
        run=lambda argv: run(parser.parse_args(argv)),
        warm=lambda _argv: warm(),
    )


def run(args):
    if args.entry:
        entry = Entry(args.entry)
        serve(entry.tools, entry)
    else:
        serve(as_tools(all_functions()), None)


if __name__ == "__main__":
    sys.exit(main())
