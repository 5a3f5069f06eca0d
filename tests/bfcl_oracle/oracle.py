"""BFCL's own checker as the oracle for toolgauge's BFCL verdicts.

Generates model outputs (BFCL's function-calling result format) from the
ground truth of the 13 single-turn categories, with the mistakes models
make and the cases BFCL treats specially, scores each with BFCL's own
checker (the `bfcl-eval` package: the runner's decoding, relevance rules
and `ast_checker`), and writes them as test data:

    tests/fixtures/bfcl_oracle/<variant>.jsonl   one result per entry
    tests/fixtures/bfcl_oracle/verdicts.jsonl    BFCL's verdict on each

`cargo test` (bfcl_oracle.rs) scores the same results with toolgauge and
compares, without Python. Run with the checker's virtual environment
(../shared/oracles/bfcl/README.md):

    .venv-bfcl/bin/python tests/bfcl_oracle/oracle.py ../shared/corpora/bfcl

With `--check`, it writes nothing and fails unless the committed data is
exactly what BFCL's checker gives now (.ci/run runs this).
"""

import copy
import json
import random
import sys
from pathlib import Path

from bfcl_eval.constants.enums import Language, ReturnFormat
from bfcl_eval.model_handler.utils import default_decode_ast_prompting
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

CATEGORIES = [
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
    "parallel_multiple", "irrelevance", "live_simple", "live_multiple", "live_parallel",
    "live_parallel_multiple", "live_irrelevance", "live_relevance",
]
# An FC model whose names have dots replaced, as toolgauge's tools do.
MODEL = "gpt-4o-2024-11-20-FC"
# A prompting model: its outputs are call syntax, names as BFCL's.
PROMPT_MODEL = "gpt-4o-2024-11-20"
PER_CATEGORY = 40
# Besides the first PER_CATEGORY: entries whose answers list "dontcare"
# or null (BFCL's "variable" values), up to this many.
VARIABLE_ENTRIES = 12
VARIANTS = [
    "truth", "int_for_float", "empty_string", "wrong_value", "drop_optional",
    "extra_param", "wrong_name", "reordered", "undecodable", "typed_text",
    "dontcare",
]
# Prompt-mode outputs (a `results_format: prompt` model in toolgauge).
PROMPT_VARIANTS = ["prompt_truth", "prompt_wrong_value", "prompt_fenced", "prompt_prose"]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def language(category):
    if category == "simple_java":
        return Language.JAVA
    if category == "simple_javascript":
        return Language.JAVASCRIPT
    return Language.PYTHON


def fc_name(name):
    return name.replace(".", "_")


def first(options):
    """The first acceptable value; None means "leave it out"."""
    value = options[0]
    if value == "":
        return None
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            chosen = first(inner) if isinstance(inner, list) else inner
            if chosen is not None:
                out[key] = chosen
        return out
    return value


def java_text(value, declared, items):
    """How a Java programmer writes `value` of `declared` type."""
    if isinstance(value, str):
        return value  # a variable's name, or text already
    if declared == "boolean":
        return "true" if value else "false"
    if declared == "long":
        return f"{value}L"
    if declared == "float":
        return f"{value}f"
    if declared in ("Array", "ArrayList") and isinstance(value, list):
        inner = ", ".join(java_text(v, items, None) if items not in ("String", "char") else f'"{v}"' for v in value)
        if declared == "Array":
            return f"new {'int' if items == 'integer' else items}[]{{{inner}}}"
        return f"new ArrayList<>(Arrays.asList({inner}))"
    if declared == "HashMap" and isinstance(value, dict):
        puts = " ".join(f'put("{k}", {json.dumps(v)});' for k, v in value.items())
        return f"new HashMap<String, String>() {{{{ {puts} }}}}"
    return str(value) if not isinstance(value, bool) else ("true" if value else "false")


def js_text(value, declared, items):
    if isinstance(value, str):
        return value
    if declared == "Boolean":
        return "true" if value else "false"
    if declared == "array" and isinstance(value, list):
        return "[" + ", ".join(js_text(v, items, None) if items else json.dumps(v) for v in value) + "]"
    if declared == "dict" and isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in value.items()) + "}"
    if declared == "Bigint":
        return f"{value}n"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def as_source(call_args, doc, lang, typed):
    """Java/JavaScript values are source text: typed (as BFCL converts it
    back) or plain JSON text."""
    props = doc["parameters"]["properties"]
    out = {}
    for key, value in call_args.items():
        declared = props.get(key, {}).get("type", "any")
        items = props.get(key, {}).get("items", {}).get("type")
        if not typed:
            out[key] = value if isinstance(value, str) else json.dumps(value)
        elif lang == Language.JAVA:
            out[key] = java_text(value, declared, items)
        else:
            out[key] = js_text(value, declared, items)
    return out


def truth_calls(ground_truth):
    calls = []
    for call in ground_truth:
        (name, params), = call.items()
        args = {}
        for key, options in params.items():
            chosen = first(options)
            if chosen is not None:
                args[key] = chosen
        calls.append([name, args])
    return calls


def docs_by_name(functions):
    return {f["name"]: f for f in functions}


def mutate(variant, calls, docs, lang, rng):
    """`calls` changed as `variant` says (a copy); None: not applicable."""
    calls = copy.deepcopy(calls)
    if not calls:
        return None
    name, args = calls[0]
    doc = docs.get(name, {"parameters": {"properties": {}, "required": []}})
    props = doc["parameters"].get("properties", {})
    required = doc["parameters"].get("required", [])
    if variant == "int_for_float":
        for key, value in args.items():
            declared = props.get(key, {}).get("type")
            if declared == "float" and isinstance(value, float) and value.is_integer():
                args[key] = int(value)
                return calls
            if declared in ("array", "tuple") and isinstance(value, list) and value and all(isinstance(v, float) and v.is_integer() for v in value):
                args[key] = [int(v) for v in value]
                return calls
        return None
    if variant == "wrong_value":
        if not args:
            return None
        key = sorted(args)[rng.randrange(len(args))]
        value = args[key]
        if isinstance(value, bool):
            args[key] = not value
        elif isinstance(value, (int, float)):
            args[key] = value + 1
        elif isinstance(value, str):
            args[key] = value + " elsewhere"
        elif isinstance(value, list):
            args[key] = value + [value[0]] if value else ["x"]
        elif isinstance(value, dict):
            args[key] = {**value, "unexpected_key": "x"}
        return calls
    if variant == "drop_optional":
        optional = [k for k in args if k not in required]
        if not optional:
            return None
        del args[optional[0]]
        return calls
    if variant == "extra_param":
        args["unexpected_param"] = "x"
        return calls
    if variant == "wrong_name":
        calls[0][0] = name + "_v2"
        return calls
    if variant == "reordered":
        if len(calls) < 2:
            return None
        calls.reverse()
        return calls
    return None


def lists_variable(answer):
    text = json.dumps(answer["ground_truth"])
    return '"dontcare"' in text or "null" in text


def dontcare_calls(ground_truth):
    """Send "dontcare" or null where the answers list it (not first)."""
    calls = truth_calls(ground_truth)
    for (name, args), call in zip(calls, ground_truth):
        (_, params), = call.items()
        for key, options in params.items():
            for option in options[1:]:
                if option == "dontcare" or option is None:
                    args[key] = option
                    return calls
    return None


def empty_string_calls(ground_truth):
    """Send "" where the answers list it, instead of leaving it out."""
    calls = truth_calls(ground_truth)
    changed = False
    for (name, args), call in zip(calls, ground_truth):
        (_, params), = call.items()
        for key, options in params.items():
            if "" in options and key not in args:
                args[key] = ""
                changed = True
                break
    return calls if changed else None


def result_of(calls, docs, lang, typed_text):
    out = []
    for name, args in calls:
        if lang != Language.PYTHON:
            args = as_source(args, docs.get(name, {"parameters": {"properties": {}}}), lang, typed_text)
        out.append({fc_name(name): json.dumps(args)})
    return out


def call_syntax(calls):
    """Python call syntax, as prompting models write it."""
    return "[" + ", ".join(
        f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
        for name, args in calls
    ) + "]"


def prompt_result(variant, category, entry, truth, docs, rng):
    lang = language(category)
    if variant == "prompt_prose" or lang != Language.PYTHON:
        return "I would call the function, but I am not sure which."
    if not truth:
        # Relevance categories: a call of the first function, or none.
        return "[]" if variant == "prompt_truth" else f"[{entry['function'][0]['name']}()]"
    calls = truth
    if variant == "prompt_wrong_value":
        calls = mutate("wrong_value", truth, docs, lang, rng) or truth
    text = call_syntax(calls)
    if variant == "prompt_fenced":
        return "```\n" + text[1:-1] + "\n```"
    return text


def judge(category, entry, answer, decoded, model):
    """BFCL's runner on a decoded output (`None`: it did not decode)."""
    if "irrelevance" in category or "relevance" in category:
        has_call = decoded is not None and not is_empty_output(decoded)
        return not has_call if "irrelevance" in category else has_call
    if decoded is None or not is_function_calling_format_output(decoded):
        return False
    checked = ast_checker(entry["function"], decoded, answer["ground_truth"], language(category), category, model)
    return bool(checked["valid"])


def bfcl_prompt_verdict(category, entry, answer, result):
    """BFCL's verdict on a prompting model's output (call syntax)."""
    fmt = {"simple_java": ReturnFormat.JAVA, "simple_javascript": ReturnFormat.JAVASCRIPT}.get(category, ReturnFormat.PYTHON)
    try:
        decoded = default_decode_ast_prompting(result, fmt, False)
    except Exception:
        decoded = None
    return judge(category, entry, answer, decoded, PROMPT_MODEL)


def bfcl_verdict(category, entry, answer, result):
    """BFCL's verdict on an FC result: a list of {name: "<json arguments>"}."""
    try:
        decoded = []
        for invoked in result:
            name = list(invoked.keys())[0]
            decoded.append({name: json.loads(invoked[name])})
    except Exception:
        decoded = None
    return judge(category, entry, answer, decoded, MODEL)


def main(corpora, out_dir=None):
    corpora = Path(corpora)
    out_dir = Path(out_dir or Path(__file__).resolve().parents[1] / "fixtures" / "bfcl_oracle")
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {v: [] for v in VARIANTS + PROMPT_VARIANTS}
    verdicts = []
    for category in CATEGORIES:
        every = read_jsonl(corpora / f"BFCL_v4_{category}.json")
        answers = {}
        answer_path = corpora / "possible_answer" / f"BFCL_v4_{category}.json"
        if answer_path.exists():
            answers = {a["id"]: a for a in read_jsonl(answer_path)}
        entries = every[:PER_CATEGORY]
        entries += [
            e for e in every[PER_CATEGORY:]
            if e["id"] in answers and lists_variable(answers[e["id"]])
        ][:VARIABLE_ENTRIES]
        lang = language(category)
        for entry in entries:
            rng = random.Random(entry["id"])
            docs = docs_by_name(entry["function"])
            answer = answers.get(entry["id"])
            truth = truth_calls(answer["ground_truth"]) if answer else []
            for variant in VARIANTS:
                if answer is None:
                    # Relevance categories: no answers; a call or none.
                    first_doc = entry["function"][0]
                    result = {
                        "truth": [],
                        "undecodable": "I cannot help with that.",
                        "extra_param": [{fc_name(first_doc["name"]): json.dumps({})}],
                    }.get(variant, [])
                elif variant == "undecodable":
                    result = "Sure! " + json.dumps(result_of(truth, docs, lang, True))
                elif variant == "typed_text":
                    result = result_of(truth, docs, lang, lang == Language.PYTHON)
                elif variant == "dontcare":
                    calls = dontcare_calls(answer["ground_truth"])
                    result = result_of(calls if calls is not None else truth, docs, lang, True)
                elif variant == "empty_string":
                    calls = empty_string_calls(answer["ground_truth"])
                    result = result_of(calls if calls is not None else truth, docs, lang, True)
                elif variant == "truth":
                    result = result_of(truth, docs, lang, True)
                else:
                    calls = mutate(variant, truth, docs, lang, rng)
                    result = result_of(calls if calls is not None else truth, docs, lang, True)
                files[variant].append({"id": entry["id"], "result": result})
                verdicts.append({
                    "variant": variant,
                    "id": entry["id"],
                    "category": category,
                    "valid": bfcl_verdict(category, entry, answer, result),
                })
            for variant in PROMPT_VARIANTS:
                result = prompt_result(variant, category, entry, truth, docs, rng)
                files[variant].append({"id": entry["id"], "result": result})
                verdicts.append({
                    "variant": variant,
                    "id": entry["id"],
                    "category": category,
                    "valid": bfcl_prompt_verdict(category, entry, answer, result),
                })
    for variant, rows in files.items():
        with open(out_dir / f"{variant}.jsonl", "w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(out_dir / "verdicts.jsonl", "w") as f:
        for row in verdicts:
            f.write(json.dumps(row) + "\n")
    valid = sum(v["valid"] for v in verdicts)
    print(f"{len(verdicts)} outputs ({valid} valid by BFCL) over {len(CATEGORIES)} categories in {out_dir}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--check"]
    corpora = args[0] if args else "../shared/corpora/bfcl"
    if "--check" not in sys.argv:
        main(corpora)
        sys.exit(0)
    # --check: make the outputs again and score them with BFCL's checker
    # here; the committed test data must be exactly that.
    import filecmp
    import tempfile
    committed = Path(__file__).resolve().parents[1] / "fixtures" / "bfcl_oracle"
    with tempfile.TemporaryDirectory() as fresh:
        main(corpora, fresh)
        names = sorted(p.name for p in committed.glob("*.jsonl"))
        _, mismatch, errors = filecmp.cmpfiles(committed, fresh, names, shallow=False)
        if mismatch or errors or sorted(p.name for p in Path(fresh).glob("*.jsonl")) != names:
            print(f"the committed BFCL oracle data differs from BFCL's checker now: {mismatch or errors}")
            sys.exit(1)
    print("the committed outputs and verdicts are BFCL's checker's")
