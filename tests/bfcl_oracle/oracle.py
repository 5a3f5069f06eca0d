"""BFCL's own checker as the oracle for toolgauge's BFCL verdicts.

Generates model outputs (BFCL's function-calling result format) from the
ground truth of the 13 single-turn categories, with the mistakes models
make and the cases BFCL treats specially, scores each with BFCL's own
checker (the `bfcl-eval` package: the runner's decoding, relevance rules
and `ast_checker`), and writes them as test data:

    tests/fixtures/bfcl_oracle/<variant>.jsonl   one result per entry
    tests/fixtures/bfcl_oracle/verdicts.jsonl    BFCL's verdict on each, and
        on a failure BFCL's error type and the parameter its first error
        names (a parameter given without a name, which BFCL files under
        None, is written "<positional>", as toolgauge names it)

`cargo test` (bfcl_oracle.rs) scores the same results with toolgauge and
compares, without Python. Run with the checker's virtual environment
(../shared/oracles/bfcl/README.md):

    .venv-bfcl/bin/python tests/bfcl_oracle/oracle.py ../shared/corpora/bfcl

With `--check`, it writes nothing and fails unless the committed data is
exactly what BFCL's checker gives now (.ci/run runs this).
"""

import ast
import copy
import json
import random
import re
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
# And Python entries with a parameter of BFCL's type "any" (a str to its
# checker), up to this many.
ANY_ENTRIES = 6
VARIANTS = [
    "truth", "int_for_float", "empty_string", "wrong_value", "drop_optional",
    "extra_param", "wrong_name", "reordered", "undecodable", "typed_text",
    "dontcare", "any_typed", "two_wrong_values", "empty_list",
]
# Prompt-mode outputs (a `results_format: prompt` model in toolgauge).
PROMPT_VARIANTS = [
    "prompt_truth", "prompt_wrong_value", "prompt_fenced", "prompt_prose", "prompt_tricky",
]
# The cases BFCL's parsers treat specially, one per entry in turn.
TRICKS = {
    Language.PYTHON: [
        "positional", "repeated", "quoted", "no_brackets_two_lines", "nested_call",
        "trailing_text", "arithmetic", "trailing_comment", "string_name", "underscored_name",
        "keyword_then_positional", "unary_plus",
    ],
    Language.JAVA: [
        "statement", "positional", "spaced", "two_statements", "repeated", "non_ascii",
        "new_array_sized",
    ],
    Language.JAVASCRIPT: [
        "statement", "positional", "spaced", "two_statements", "repeated", "non_ascii",
        "single_quotes", "await",
    ],
}


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
        args[key] = wrong(args[key])
        return calls
    if variant == "two_wrong_values":
        # Written last key first: BFCL reports the first wrong one written.
        if len(args) < 2:
            return None
        keys = sorted(args, reverse=True)
        calls[0][1] = {k: wrong(args[k]) if k in keys[:2] else args[k] for k in keys}
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


def any_params(entry):
    return [
        (f["name"], key)
        for f in entry["function"]
        for key, prop in f["parameters"].get("properties", {}).items()
        if prop.get("type") == "any"
    ]


def any_typed_calls(calls, docs):
    """Another type than str where BFCL declares "any" (Python entries)."""
    calls = copy.deepcopy(calls)
    for name, args in calls:
        props = docs.get(name, {"parameters": {}})["parameters"].get("properties", {})
        for key, value in args.items():
            if props.get(key, {}).get("type") != "any":
                continue
            if isinstance(value, bool) or value is None:
                args[key] = str(value)
            elif isinstance(value, int):
                args[key] = float(value)
            elif isinstance(value, float):
                args[key] = int(value) if value.is_integer() else str(value)
            elif isinstance(value, str):
                args[key] = [value]
            else:
                args[key] = json.dumps(value)
            return calls
    return None


def wrong(value):
    """A value no answer lists, of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + " elsewhere"
    if isinstance(value, list):
        return value + [value[0]] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "unexpected_key": "x"}
    return value


def empty_list_calls(calls, ground_truth, docs):
    """[] for an array that may be left out (BFCL reads "" as an empty list)."""
    calls = copy.deepcopy(calls)
    for (name, args), call in zip(calls, ground_truth):
        (_, params), = call.items()
        props = docs.get(name, {"parameters": {}})["parameters"].get("properties", {})
        for key, options in params.items():
            if "" in options and props.get(key, {}).get("type") in ("array", "tuple"):
                args[key] = []
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


def java_prompt_value(value, declared, items):
    """A value as a Java programmer writes it in a call."""
    if isinstance(value, str):
        if declared == "String":
            return json.dumps(value, ensure_ascii=False)
        if declared == "char":
            return f"'{value}'"
        return value  # a variable's name, or an expression
    return java_text(value, declared, items)


def js_prompt_value(value, declared, items):
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if declared == "String" else value
    return js_text(value, declared, items)


def call_syntax(calls, lang=Language.PYTHON, docs=None, sep=", "):
    """Call syntax, as prompting models write it: Python's, or for Java
    and JavaScript entries their source text."""
    def argument(name, key, value):
        if lang == Language.PYTHON:
            return f"{key}={value!r}"
        prop = docs.get(name, {"parameters": {"properties": {}}})["parameters"]["properties"].get(key, {})
        write = java_prompt_value if lang == Language.JAVA else js_prompt_value
        return f"{key}={write(value, prop.get('type', 'any'), prop.get('items', {}).get('type'))}"

    return "[" + ", ".join(
        f"{name}(" + sep.join(argument(name, k, v) for k, v in args.items()) + ")"
        for name, args in calls
    ) + "]"


def tricky(trick, calls, lang, docs):
    """The output a trick makes of `calls` (the truth)."""
    text = call_syntax(calls, lang, docs)
    inner = text[1:-1]
    first_open = inner.index("(") + 1
    if trick == "positional":
        bare = "true" if lang == Language.JAVASCRIPT and len(inner) % 2 else "x"
        literal = "5" if lang != Language.PYTHON else bare
        return "[" + inner[:first_open] + f"{bare}, {literal}, " + inner[first_open:] + "]"
    if trick == "repeated":
        name, args = calls[0]
        if not args:
            return text
        key = next(iter(args))
        again = call_syntax([[name, {key: args[key]}]], lang, docs)[len(name) + 2:-2]
        return "[" + inner[:first_open] + again + ", " + inner[first_open:] + "]"
    if trick == "quoted":
        return f"'{text}'"
    if trick == "no_brackets_two_lines":
        return inner.replace("), ", ")\n")
    if trick == "nested_call":
        name, args = calls[0]
        if not args:
            return text
        key = next(iter(args))
        return call_syntax([[name, {**args, key: None}]], lang, docs).replace(f"{key}=None", f"{key}=helper(value=1)", 1)
    if trick == "trailing_text":
        return text + " Done."
    if trick in ("arithmetic", "unary_plus"):
        # BFCL evaluates an operation with Python, and reads `+n` as -n.
        name, args = calls[0]
        numbers = [k for k, v in args.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not numbers:
            return text
        key = numbers[0]
        value = args[key]
        if trick == "unary_plus":
            written = f"+{value}"
        elif isinstance(value, int):
            written = f"{2 * value} // 2"
        else:
            written = f"{value!r} * 2 / 2"
        return call_syntax([[name, {**args, key: None}]] + calls[1:], lang, docs).replace(f"{key}=None", f"{key}={written}", 1)
    if trick == "trailing_comment":
        return text + "\n# I called the function above."
    if trick == "string_name":
        return "[" + repr(calls[0][0]) + inner[len(calls[0][0]):] + "]"
    if trick == "underscored_name":
        return text.replace(calls[0][0] + "(", calls[0][0].replace(".", "_") + "(", 1)
    if trick == "keyword_then_positional":
        if "=" not in inner[first_open:inner.index(")")]:
            return text
        comma = inner.find(", ", first_open)
        end = comma if 0 <= comma < inner.index(")") else inner.index(")")
        return "[" + inner[:end] + ", 'extra'" + inner[end:] + "]"
    if trick == "statement":
        return inner + ";"
    if trick == "spaced":
        return call_syntax(calls, lang, docs, sep=",\n    ").replace("(", "(\n    ", 1)
    if trick == "two_statements":
        return inner + "; helper(value=1);"
    if trick == "non_ascii":
        name, args = calls[0]
        props = docs.get(name, {"parameters": {"properties": {}}})["parameters"]["properties"]
        strings = [
            k for k, v in args.items()
            if isinstance(v, str) and (lang == Language.PYTHON or props.get(k, {}).get("type") == "String")
        ]
        if not strings:
            return text
        return call_syntax([[name, {**args, strings[0]: args[strings[0]] + " é"}]], lang, docs)
    if trick == "new_array_sized":
        return "[" + inner[:first_open] + "data=new int[3], " + inner[first_open:] + "]"
    if trick == "single_quotes":
        return re.sub(r'"([^"\\]*)"', r"'\1'", text)
    if trick == "await":
        return "await " + inner
    raise ValueError(trick)


def prompt_result(variant, category, entry, truth, docs, rng, index):
    lang = language(category)
    if variant == "prompt_prose":
        return "I would call the function, but I am not sure which."
    if not truth:
        # Relevance categories: a call of the first function, or none.
        return "[]" if variant == "prompt_truth" else f"[{entry['function'][0]['name']}()]"
    calls = truth
    if variant == "prompt_wrong_value":
        calls = mutate("wrong_value", truth, docs, lang, rng) or truth
    if variant == "prompt_tricky":
        tricks = TRICKS[lang]
        return tricky(tricks[index % len(tricks)], truth, lang, docs)
    text = call_syntax(calls, lang, docs)
    if variant == "prompt_fenced":
        return "```\n" + text[1:-1] + "\n```"
    return text


PARAMETER = re.compile(r"parameter:? ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|None)")


def failure(checked):
    """BFCL's error type and the parameter its first error names."""
    error_type = checked["error_type"]
    parameter = None
    # dict_checker's errors name a key inside the dict, not the parameter.
    if checked["error"] and not error_type.startswith("value_error:dict"):
        found = PARAMETER.search(str(checked["error"][0]))
        if found:
            parameter = ast.literal_eval(found.group(1))
            if parameter is None:
                parameter = "<positional>"
    return {"valid": False, "error_type": error_type, "parameter": parameter}


def judge(category, entry, answer, decoded, model):
    """BFCL's runner on a decoded output (`None`: it did not decode)."""
    if "irrelevance" in category or "relevance" in category:
        has_call = decoded is not None and not is_empty_output(decoded)
        return {"valid": not has_call if "irrelevance" in category else has_call}
    if decoded is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed", "parameter": None}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format", "parameter": None}
    checked = ast_checker(entry["function"], decoded, answer["ground_truth"], language(category), category, model)
    return {"valid": True} if checked["valid"] else failure(checked)


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
        if lang == Language.PYTHON:
            entries += [
                e for e in every[PER_CATEGORY:]
                if any_params(e) and e not in entries
            ][:ANY_ENTRIES]
        for index, entry in enumerate(entries):
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
                elif variant == "any_typed" and lang == Language.PYTHON:
                    calls = any_typed_calls(truth, docs)
                    result = result_of(calls if calls is not None else truth, docs, lang, True)
                elif variant == "empty_list" and lang == Language.PYTHON:
                    calls = empty_list_calls(truth, answer["ground_truth"], docs)
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
                    **bfcl_verdict(category, entry, answer, result),
                })
            for variant in PROMPT_VARIANTS:
                result = prompt_result(variant, category, entry, truth, docs, rng, index)
                files[variant].append({"id": entry["id"], "result": result})
                verdicts.append({
                    "variant": variant,
                    "id": entry["id"],
                    "category": category,
                    **bfcl_prompt_verdict(category, entry, answer, result),
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
