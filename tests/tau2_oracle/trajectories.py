"""Conversations made from tau2 tasks' gold actions and from mistakes made on
them, each scored by tau2's own evaluator: the fixture toolgauge's tau2
verdict must agree with (tests/fixtures/tau2/).

    trajectories.py OUT_DIR [--domains airline,retail] [--tasks N]
                                      write OUT_DIR/<domain>.json
    trajectories.py OUT_DIR --check [--sample N]
                                      score the committed files again (or
                                      every N-th conversation) and fail on
                                      any verdict that changed

Each conversation is tau2's shape: its greeting, the user's reason for the
call, one assistant message per tool call with the result tau2's
environment gives, an answer, then ###STOP###. The variants of a task: its
gold actions; a write left out; an argument changed; an enum value changed;
a write made twice; text only; the required information not said; a
transfer to a human at the end; the user's last act on their own phone
left undone (telecom, whose user's acts are its own messages: the agent
asks, the user calls its tools and says so). Tasks whose verdict needs an NL judge are
left out (no judge here).

A file holds tau2 Results JSON's own fields (`info.environment_info.
domain_name`, `simulations[].task_id`, `messages`, `termination_reason`,
`reward_info`), the tool messages left out (toolgauge's replay runs the
calls itself), and each simulation's `variant` beside them.
"""

import argparse
import copy
import json
import sys
from pathlib import Path

# The bridge's own preparation for tau2 (data, no network, no keys), and
# telecom's tasks made by tau2's generator.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts/tau2_bridge"))
import tau2_ready  # noqa: E402
import telecom_data  # noqa: E402

tau2_ready.quiet("ERROR")
telecom_data.ready()

from tau2.data_model.message import (  # noqa: E402
    AssistantMessage,
    ToolCall,
    UserMessage,
)
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.data_model.tasks import RewardType  # noqa: E402
from tau2.environment.toolkit import ToolType, get_tool_types  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE  # noqa: E402
from tau2.registry import registry  # noqa: E402

STOP = "###STOP###"
TRANSFER_TOOL = "transfer_to_human_agents"


def judged_without_llm(task):
    criteria = task.evaluation_criteria
    return not (criteria and criteria.nl_assertions and RewardType.NL_ASSERTION in criteria.reward_basis)


def opening(task):
    scenario = task.user_scenario.instructions
    if isinstance(scenario, str):
        return scenario
    return "\n".join(p for p in (scenario.reason_for_call, scenario.known_info) if p)


def answer(task, say_info=True):
    info = (task.evaluation_criteria.communicate_info or []) if task.evaluation_criteria else []
    if info and say_info:
        return ", ".join(info)
    return "Done. Is there anything else I can help you with?"


def enum_values(tools, name, argument):
    schema = tools[name].openai_schema["function"]["parameters"]["properties"].get(argument, {})
    return schema.get("enum")


def variants(task, tools, writes):
    """The task's action lists and answers: (variant, actions, answer),
    each action (name, arguments, requestor)."""
    gold = [
        (a.name, dict(a.arguments), a.requestor) for a in (task.evaluation_criteria.actions or [])
    ]
    said = answer(task)
    out = [("gold", gold, said), ("text_only", [], said)]
    users = [i for i, action in enumerate(gold) if action[2] == "user"]
    if users:
        # The user's last act on their own phone left undone.
        out.append(("user_action_left_out", gold[: users[-1]] + gold[users[-1] + 1 :], said))
    write_at = [i for i, (name, _, by) in enumerate(gold) if name in writes and by == "assistant"]
    if write_at:
        last = write_at[-1]
        out.append(("write_left_out", gold[:last] + gold[last + 1 :], said))
        out.append(("write_twice", gold[: last + 1] + [copy.deepcopy(gold[last])] + gold[last + 1 :], said))
        first = write_at[0]
        name, arguments, _ = gold[first]
        for key, value in arguments.items():
            values = enum_values(tools, name, key)
            if values and value in values and len(values) > 1:
                changed = copy.deepcopy(gold)
                changed[first][1][key] = next(v for v in values if v != value)
                out.append(("enum_changed", changed, said))
                break
        for key, value in arguments.items():
            if isinstance(value, str) and not enum_values(tools, name, key):
                changed = copy.deepcopy(gold)
                changed[first][1][key] = value + "X"
                out.append(("argument_changed", changed, said))
                break
    if task.evaluation_criteria.communicate_info:
        out.append(("info_unsaid", gold, answer(task, say_info=False)))
    if TRANSFER_TOOL in tools:
        transfer = (TRANSFER_TOOL, {"summary": "The user asked for a human agent."}, "assistant")
        out.append(("transfer", gold + [transfer], said))
    return out


def conversation(domain, task, actions, said):
    """tau2's messages for one variant, tool results from tau2's environment."""
    environment = registry.get_env_constructor(domain)()
    initial = task.initial_state
    environment.set_state(
        initialization_data=initial.initialization_data if initial else None,
        initialization_actions=initial.initialization_actions if initial else None,
        message_history=[],
    )
    messages = [
        AssistantMessage(role="assistant", content=DEFAULT_FIRST_AGENT_MESSAGE.content),
        UserMessage(role="user", content=opening(task)),
    ]
    for run in runs_by_requestor(actions):
        if run[0][1][2] == "assistant":
            for i, (name, arguments, _) in run:
                call = ToolCall(id=f"call_{i}", name=name, arguments=arguments)
                messages.append(AssistantMessage(role="assistant", content=None, tool_calls=[call]))
                messages.append(environment.get_response(call))
            continue
        # The user's acts on their own phone (telecom), asked for by the
        # agent: one message of the user's calls, their results, its word.
        names = ", ".join(name for _, (name, _, _) in run)
        messages.append(
            AssistantMessage(role="assistant", content=f"Please do this on your side: {names}.")
        )
        calls = [
            ToolCall(id=f"user_{i}", name=name, arguments=arguments, requestor="user")
            for i, (name, arguments, _) in run
        ]
        messages.append(UserMessage(role="user", content=None, tool_calls=calls))
        messages.extend(environment.get_response(call) for call in calls)
        messages.append(UserMessage(role="user", content=f"I did that: {names}."))
    messages.append(AssistantMessage(role="assistant", content=said))
    messages.append(UserMessage(role="user", content=STOP))
    return messages


def runs_by_requestor(actions):
    """The actions, numbered, in runs of the same requestor."""
    runs = []
    for i, action in enumerate(actions):
        if runs and runs[-1][-1][1][2] == action[2]:
            runs[-1].append((i, action))
        else:
            runs.append([(i, action)])
    return runs


def score(domain, task, messages):
    simulation = SimulationRun(
        id="generated",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason.USER_STOP,
        messages=messages,
    )
    info = evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=EvaluationType.ALL,
        solo_mode=False,
        domain=domain,
    )
    breakdown = {
        (k.value if isinstance(k, RewardType) else str(k)): v
        for k, v in (info.reward_breakdown or {}).items()
    }
    return {"reward": info.reward, "reward_breakdown": breakdown}


def kept(message):
    """A message as the fixture keeps it: the agent's and the user's."""
    if message.role == "tool":
        return None
    dumped = {"role": message.role, "content": message.content}
    if getattr(message, "tool_calls", None):
        dumped["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "requestor": c.requestor}
            for c in message.tool_calls
        ]
    return dumped


def generate(domain, limit):
    tools_env = registry.get_env_constructor(domain)()
    tools = {t.name: t for t in tools_env.get_tools()}
    writes = {n for n, kind in get_tool_types(tools_env.tools).items() if kind == ToolType.WRITE}
    tasks = [t for t in registry.get_tasks_loader(domain)() if judged_without_llm(t)]
    simulations = []
    for task in tasks[:limit]:
        for variant, actions, said in variants(task, tools, writes):
            messages = conversation(domain, task, actions, said)
            simulations.append(
                {
                    "id": f"{domain}_{task.id}_{variant}",
                    "task_id": task.id,
                    "variant": variant,
                    "termination_reason": "user_stop",
                    "messages": [m for m in map(kept, messages) if m],
                    "reward_info": score(domain, task, messages),
                }
            )
            print(f"{simulations[-1]['id']}: {simulations[-1]['reward_info']['reward']}", file=sys.stderr)
    return {"info": {"environment_info": {"domain_name": domain}}, "simulations": simulations}


def check(path, sample):
    recorded = json.loads(path.read_text())
    domain = recorded["info"]["environment_info"]["domain_name"]
    tasks = {t.id: t for t in registry.get_tasks_loader(domain)()}
    tools_env = registry.get_env_constructor(domain)()
    tools = {t.name: t for t in tools_env.get_tools()}
    writes = {n for n, kind in get_tool_types(tools_env.tools).items() if kind == ToolType.WRITE}
    changed = 0
    for simulation in recorded["simulations"][::sample]:
        task = tasks[simulation["task_id"]]
        made = {v: (a, s) for v, a, s in variants(task, tools, writes)}
        actions, said = made[simulation["variant"]]
        now = score(domain, task, conversation(domain, task, actions, said))
        if now != simulation["reward_info"]:
            changed += 1
            print(f"{simulation['id']}: recorded {simulation['reward_info']}, now {now}", file=sys.stderr)
    return changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--domains", default="airline,retail")
    parser.add_argument("--tasks", type=int, default=1000, help="at most this many tasks per domain")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--sample", type=int, default=1, help="with --check: every N-th conversation")
    args = parser.parse_args()
    if args.check:
        changed = sum(check(args.out / f"{d}.json", args.sample) for d in args.domains.split(","))
        if changed:
            raise SystemExit(f"{changed} verdict(s) changed: tests/fixtures/tau2 is not tau2's verdict")
        print("tests/fixtures/tau2: every verdict checked is still tau2's")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for domain in args.domains.split(","):
        made = generate(domain, args.tasks)
        (args.out / f"{domain}.json").write_text(json.dumps(made, indent=1) + "\n")


if __name__ == "__main__":
    main()
