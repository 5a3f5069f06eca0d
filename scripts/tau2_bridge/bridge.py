"""tau2-bench's domains served over MCP (stdio), for toolgauge.

    bridge.py --domain D --export [--split S]
                              print each task of domain D as one JSON line:
                              the agent's and the user simulator's system
                              prompts as tau2 builds them, the greeting,
                              the gold actions and what the verdict weighs
    bridge.py --domain D      list the tools of domain D, the agent's and
                              the user's (calls refused)
    bridge.py --domain D --task ID
                              serve task ID: tau2's tools for the agent,
                              on an environment with the task's initial
                              state applied

Started with a listening Unix socket as its stdin (toolgauge's `"forks":
true`, scripts/forking.py), the bridge loads tau2 and the domain once and
forks a child for each connection, which serves as above with the
arguments the connection's first line gives (`["--task", "ID"]` or none).
The child has the domain's environment as the loaded bridge built it, its
own copy: a fresh environment, as tau2 gives each simulation, in
milliseconds where a new Python takes seconds.

Telecom's user acts on their own phone with tools of its own: the bridge
lists them beside the agent's, runs a call to one as the user's
(`requestor="user"`, as tau2's orchestrator does), and reads the user's
calls in the transcript (a user entry with `calls`, their results with
`requestor: "user"`) back as tau2's messages. Telecom's tasks are made by
tau2's own generator (telecom_data.py) the first time.

Everything comes from tau2 itself (`../shared/oracles/tau2`), never a port:
the tools as `Tool.openai_schema` gives them, each call answered by
`Environment.get_response` (the same text, and the same "Error: ..." a model
reads in tau2), the prompts from `LLMAgent` and `UserSimulator`.

One more tool, `tau2_evaluate`, is toolgauge's probe when the conversation
ends and never shown to the model. toolgauge fills its `transcript`
argument with the whole conversation ({"messages": [...], "ended_by": ...});
the bridge rebuilds tau2's messages from it and answers tau2's
`evaluate_simulation` verdict as JSON: {"reward", "tau2": {"reward_basis",
"breakdown", "db_match", "communicate", "actions", "note", "ended_by",
"db_hash"}}, the last the hash tau2 gives the trial's database.
A conversation tau2 would have cut short (its `DEFAULT_MAX_ERRORS` tool
errors, or `DEFAULT_MAX_STEPS` steps) is judged as tau2 judges one that
ended so: 0.

NL assertions are judged by tau2's own NL evaluator with the judge
toolgauge names (`run --judge-model`: TOOLGAUGE_JUDGE_BASE_URL, _MODEL,
_API_KEY, _REPEATS), never tau2's default; without one such a task is
refused ("not judged"). A judge that fails (no answer, or not in tau2's
JSON) leaves the reward unknown (null): the parts tau2 computes without
it are given, and "tau2.judge.error" says what failed. With repeats N the conversation is judged N
times: the first verdict counts, and "tau2.judge" gives the judge's
NL_ASSERTION verdict each time, whether they differ, and its tokens.
"""

import argparse
import asyncio
import functools
import json
import sys
import uuid
from pathlib import Path

import mcp.server.stdio
import mcp.types as types
from mcp.server.lowlevel import Server

import tau2_ready  # before tau2: see its doc

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
import forking  # noqa: E402  (scripts/forking.py)

tau2_ready.quiet("WARNING")


def domain_of(argv):
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--domain")
    return pre.parse_known_args(argv)[0].domain


if domain_of(sys.argv[1:]) == "telecom":
    import telecom_data

    # Before tau2 reads TAU2_DATA_DIR: telecom's tasks by tau2's generator.
    telecom_data.ready()

# isort: split
import tau2.evaluator.evaluator_nl_assertions as nl_evaluator
from tau2.agent.llm_agent import LLMAgent
from tau2.config import DEFAULT_LLM_NL_ASSERTIONS_ARGS, DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau2.data_model.message import (
    AssistantMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.tasks import RewardType
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
from tau2.registry import registry
from tau2.user.user_simulator import UserSimulator

EVALUATE = "tau2_evaluate"
# toolgauge's word for how the conversation ended, as tau2's reason.
ENDINGS = {
    "user_stop": TerminationReason.USER_STOP,
    "agent_stop": TerminationReason.AGENT_STOP,
    "max_steps": TerminationReason.MAX_STEPS,
    "too_many_errors": TerminationReason.TOO_MANY_ERRORS,
    "agent_error": TerminationReason.AGENT_ERROR,
    "user_error": TerminationReason.USER_ERROR,
}


@functools.cache
def tasks_of(domain, split=None):
    loader = registry.get_tasks_loader(domain)
    return loader(task_split_name=split) if split else loader()


@functools.cache
def task_by_id(domain):
    """Every task of the domain, whatever its split, by id."""
    loader = registry.get_tasks_loader(domain)
    return {task.id: task for task in loader(task_split_name=None)}


# The environment a forking bridge built before it forked: each child
# takes its own copy once.
BUILT = {}


@functools.cache
def listed(domain):
    """The domain's tools as MCP lists them, the agent's and the user's
    (telecom's user acts on their own phone): the same for every task."""
    environment = registry.get_env_constructor(domain)()
    user_tools = environment.get_user_tools() if environment.user_tools is not None else []
    return as_tools(environment.get_tools() + user_tools)


def fresh_environment(domain):
    built = BUILT.pop(domain, None)
    return built if built is not None else registry.get_env_constructor(domain)()


def export(domain, split):
    environment = registry.get_env_constructor(domain)()
    tools = environment.get_tools()
    agent = LLMAgent(tools=tools, domain_policy=environment.get_policy(), llm="unused")
    for task in tasks_of(domain, split):
        try:
            user_tools = environment.get_user_tools(include=task.user_tools) or None
        except Exception:
            user_tools = None
        instructions = str(task.user_scenario)
        user = UserSimulator(tools=user_tools, instructions=instructions, llm="unused")
        criteria = task.evaluation_criteria
        scenario = task.user_scenario.instructions
        opening = (
            "\n".join(
                part for part in (scenario.reason_for_call, scenario.known_info) if part
            )
            if not isinstance(scenario, str)
            else scenario
        )
        line = {
            "id": task.id,
            "domain": domain,
            "agent_system": agent.system_prompt,
            "greeting": DEFAULT_FIRST_AGENT_MESSAGE.content,
            "user_system": user.system_prompt,
            "user_instructions": instructions,
            "user_opening": opening,
            "user_tools": [t.name for t in user_tools or []],
            "tools": [t.name for t in tools],
            "actions": [
                {"name": a.name, "arguments": a.arguments, "requestor": a.requestor}
                for a in (criteria.actions or [] if criteria else [])
            ],
            "communicate_info": list(criteria.communicate_info or []) if criteria else [],
            "nl_assertions": list(criteria.nl_assertions or []) if criteria else [],
            "reward_basis": [b.value for b in (criteria.reward_basis if criteria else [])],
            "purpose": task.description.purpose if task.description else None,
        }
        print(json.dumps(line))


class Judge:
    """The judge toolgauge named, put in place of tau2's default for its NL
    evaluator (litellm, OpenAI-compatible), its tokens counted."""

    def __init__(self, settings):
        self.repeats = max(1, int(settings.get("repeats", "1")))
        self.model = settings["model"]
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        # A local server needs no key, but the OpenAI client wants one.
        arguments = {
            **DEFAULT_LLM_NL_ASSERTIONS_ARGS,
            "api_base": settings["base_url"],
            "api_key": settings.get("api_key") or "none",
        }
        nl_evaluator.DEFAULT_LLM_NL_ASSERTIONS = f"openai/{self.model}"
        nl_evaluator.DEFAULT_LLM_NL_ASSERTIONS_ARGS = arguments
        generate = nl_evaluator.generate

        def counted(*args, **kwargs):
            message = generate(*args, **kwargs)
            usage = message.usage or {}
            self.input_tokens += usage.get("prompt_tokens") or 0
            self.output_tokens += usage.get("completion_tokens") or 0
            self.cost += message.cost or 0.0
            return message

        nl_evaluator.generate = counted

    def use(self, rewards):
        return {
            "model": self.model,
            "rewards": rewards,
            "flipped": len(set(rewards)) > 1,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            # As tau2 prices it: litellm's table (0 for a model not in it).
            "cost_usd": self.cost,
        }


JUDGE = Judge(tau2_ready.JUDGE) if tau2_ready.JUDGE.get("model") else None


class Trial:
    """One task's environment, its initial state applied, as tau2 starts it."""

    def __init__(self, domain, task_id):
        task = task_by_id(domain).get(task_id)
        if task is None:
            raise SystemExit(f"bridge.py: no tau2 task {task_id!r} in domain {domain}")
        self.domain = domain
        self.task = task
        self.environment = fresh_environment(domain)
        initial = self.task.initial_state
        self.environment.set_state(
            initialization_data=initial.initialization_data if initial else None,
            initialization_actions=initial.initialization_actions if initial else None,
            message_history=[],
        )
        self.tools = listed(domain)
        self.errors = 0

    def call(self, name, arguments, call_id):
        message = self.environment.get_response(
            ToolCall(id=call_id, name=name, arguments=arguments, requestor=self.requestor(name))
        )
        self.errors += int(message.error)
        return message.content

    def requestor(self, name):
        """Whose tool `name` is: the user's own (toolgauge shows it to the
        simulated user alone), else the agent's."""
        user_tools = self.environment.user_tools
        agent_has = self.environment.tools.has_tool(name)
        return "user" if user_tools is not None and user_tools.has_tool(name) and not agent_has else "assistant"

    def evaluate(self, transcript):
        criteria = self.task.evaluation_criteria
        judged = bool(
            criteria and criteria.nl_assertions and RewardType.NL_ASSERTION in criteria.reward_basis
        )
        if judged and JUDGE is None:
            raise ValueError(
                f"not judged: {len(criteria.nl_assertions)} NL assertion(s) need a judge model: "
                "name one with toolgauge run --judge-model FILE"
            )
        messages = tau2_messages(transcript.get("messages", []))
        ended_by = transcript.get("ended_by", "")
        reason = ENDINGS.get(ended_by)
        if reason is None:
            note = f"toolgauge ended the conversation so: {ended_by!r}"
            return {"reward": 0.0, "tau2": {"note": note}}
        # tau2's orchestrator would have ended the conversation here.
        if self.errors >= DEFAULT_MAX_ERRORS:
            reason = TerminationReason.TOO_MANY_ERRORS
        elif steps(messages) >= DEFAULT_MAX_STEPS:
            reason = TerminationReason.MAX_STEPS
        simulation = SimulationRun(
            id=str(uuid.uuid4()),
            task_id=self.task.id,
            start_time="",
            end_time="",
            duration=0.0,
            termination_reason=reason,
            messages=messages,
        )
        try:
            infos = [
                self.evaluated(simulation, EvaluationType.ALL)
                for _ in range(JUDGE.repeats if judged else 1)
            ]
        except Exception as error:
            if not judged:
                raise
            return self.without_judge(simulation, reason, error)
        info = infos[0]
        said = verdict(info)
        result = {
            "reward": info.reward,
            "tau2": {
                **said,
                "ended_by": reason.value,
                # The trial's database as the conversation left it.
                "db_hash": self.environment.get_db_hash(),
                # tau2's compute_metrics counts it apart from the reward.
                "checks": {"db_match": said["db_match"]},
            },
        }
        if judged:
            # The judge's own verdict each time (its part of the reward):
            # a DB check that fails would hide a flip in the reward.
            nl = [(i.reward_breakdown or {}).get(RewardType.NL_ASSERTION, i.reward) for i in infos]
            result["tau2"]["judge"] = JUDGE.use(nl)
        return result


    def evaluated(self, simulation, kind):
        return evaluate_simulation(
            simulation=simulation,
            task=self.task,
            evaluation_type=kind,
            solo_mode=False,
            domain=self.domain,
        )

    def without_judge(self, simulation, reason, error):
        """The judge failed: the parts of the reward tau2 computes without
        it (the database, what was said, the actions), each by tau2's own
        evaluator, and the reward unknown. The error is the judge's."""
        basis = set(self.task.evaluation_criteria.reward_basis)
        breakdown, db_match = {}, None
        for kind in (EvaluationType.ENV, EvaluationType.COMMUNICATE, EvaluationType.ACTION):
            info = self.evaluated(simulation, kind)
            for part, value in (info.reward_breakdown or {}).items():
                if part in basis:
                    breakdown[part.value] = value
            if info.db_check is not None:
                db_match = info.db_check.db_match
        failed = {**JUDGE.use([]), "error": f"{type(error).__name__}: {error}"}
        return {
            "reward": None,
            "tau2": {
                "reward_basis": [b.value for b in self.task.evaluation_criteria.reward_basis],
                "breakdown": breakdown,
                "db_match": db_match,
                "ended_by": reason.value,
                "db_hash": self.environment.get_db_hash(),
                "checks": {"db_match": db_match},
                "judge": failed,
            },
        }


class Listing:
    """A domain's tools, for toolgauge to load a suite with: no calls."""

    def __init__(self, domain):
        self.tools = listed(domain)

    def call(self, name, arguments, call_id):
        raise ValueError("this bridge lists tools only: start it with --task ID to run calls")

    def evaluate(self, transcript):
        raise ValueError("this bridge lists tools only: start it with --task ID to judge")


def verdict(info):
    breakdown = {
        (k.value if isinstance(k, RewardType) else str(k)): v
        for k, v in (info.reward_breakdown or {}).items()
    }
    return {
        "reward_basis": [b.value for b in info.reward_basis or []],
        "breakdown": breakdown,
        "db_match": info.db_check.db_match if info.db_check else None,
        "communicate": [
            {"info": c.info, "met": c.met} for c in info.communicate_checks or []
        ],
        "actions": [
            {"name": a.action.name, "met": a.action_match} for a in info.action_checks or []
        ],
        "nl_assertions": [
            {"assertion": c.nl_assertion, "met": c.met, "justification": c.justification}
            for c in info.nl_assertions or []
        ],
        "note": (info.info or {}).get("note"),
    }


def steps(messages):
    """The orchestrator's steps after its greeting: each message of the
    user or the agent, and each batch of tool results, is one."""
    count, in_batch = 0, False
    for message in messages[1:]:
        batch = isinstance(message, ToolMessage)
        count += int(not (batch and in_batch))
        in_batch = batch
    return count


def tau2_messages(entries):
    """toolgauge's transcript as tau2's messages, in order."""
    messages = []
    for entry in entries:
        role = entry.get("role")
        text = entry.get("text") or None
        if role == "assistant":
            calls = [
                ToolCall(id=c["id"], name=c["name"], arguments=c.get("arguments") or {})
                for c in entry.get("calls") or []
            ]
            messages.append(
                AssistantMessage(role="assistant", content=text, tool_calls=calls or None)
            )
        elif role == "user":
            # The user's own calls (telecom's), as tau2 records them.
            calls = [
                ToolCall(
                    id=c["id"], name=c["name"], arguments=c.get("arguments") or {}, requestor="user"
                )
                for c in entry.get("calls") or []
            ]
            messages.append(UserMessage(role="user", content=text, tool_calls=calls or None))
        elif role == "tool":
            messages.append(
                ToolMessage(
                    id=entry["call_id"],
                    role="tool",
                    content=entry.get("text", ""),
                    requestor=entry.get("requestor") or "assistant",
                    error=bool(entry.get("is_error")),
                )
            )
    return messages


def as_tools(tools):
    listed = []
    for tool in tools:
        function = tool.openai_schema["function"]
        listed.append(
            types.Tool(
                name=function["name"],
                description=function.get("description", ""),
                inputSchema=function["parameters"],
            )
        )
    listed.append(
        types.Tool(
            name=EVALUATE,
            description="toolgauge's probe: tau2's verdict on the conversation (never shown to the model).",
            inputSchema={
                "type": "object",
                "properties": {"transcript": {"type": "object"}},
                "required": ["transcript"],
            },
        )
    )
    return listed


def serve(trial):
    server = Server("tau2-bridge")
    calls = 0

    @server.list_tools()
    async def list_tools():
        return trial.tools

    # tau2 runs whatever the agent sends: its errors, not a schema check's.
    @server.call_tool(validate_input=False)
    async def call_tool(name, arguments):
        nonlocal calls
        if name == EVALUATE:
            text = json.dumps(trial.evaluate(arguments.get("transcript") or {}))
            return [types.TextContent(type="text", text=text)]
        calls += 1
        # The text as it is, errors too: what the model reads in tau2.
        text = trial.call(name, arguments, f"call_{calls}")
        return [types.TextContent(type="text", text=text)]

    async def run():
        async with mcp.server.stdio.stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    asyncio.run(run())


def warm(domain):
    """What tau2 builds on first use (its tasks, pydantic's models of the
    tools), built once before forking: no child builds it again. tau2's
    evaluator is run for it on no conversation, the judge never asked."""
    listed(domain)
    task = next(iter(task_by_id(domain).values()))
    simulation = SimulationRun(
        id="warm-up",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason.USER_STOP,
        messages=[],
    )
    evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=EvaluationType.ENV,
        solo_mode=False,
        domain=domain,
    )
    # Built once and never used here: each child's copy is as fresh as
    # the constructor made it.
    BUILT[domain] = registry.get_env_constructor(domain)()


def run(args):
    """What the arguments ask: an export, a trial's server, the listing."""
    if args.export:
        export(args.domain, args.split)
    elif args.task is not None:
        serve(Trial(args.domain, args.task))
    else:
        serve(Listing(args.domain))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True, help="airline, retail, telecom or mock")
    parser.add_argument("--task", help="serve this task's environment")
    parser.add_argument("--export", action="store_true", help="print every task as JSON lines")
    parser.add_argument("--split", help="with --export: a split of the domain (test, train, base)")
    forking.main(
        sys.argv[1:],
        run=lambda argv: run(parser.parse_args(argv)),
        warm=lambda argv: warm(parser.parse_args(argv).domain),
    )


if __name__ == "__main__":
    sys.exit(main())
