"""tau2's own runs of telecom tasks, made by tau2's orchestrator, for
toolgauge to replay: the user's acts on their own phone are made as tau2
makes them (its `Orchestrator`, the user's calls routed by requestor, the
environment synced after each), not as a script of ours shapes them.

    orchestrated.py OUT [--tasks N]
        run the first N tasks of telecom's small split in tau2's
        `Orchestrator`, twice each: a gold agent and user playing the
        task's gold actions, and the same with the user's last act left
        undone; each scored by tau2's evaluate_simulation; write a tau2
        Results JSON to OUT

The participants are tau2's half-duplex agent and user, scripted: the
agent makes its gold actions one per message and, where the next gold
action is the user's, asks for the user's actions in a row; the user
opens with its reason for the call, makes the actions asked for in one
message of calls, says it did, and says ###STOP### after the agent's
answer. Left undone, the user's last act is out of both their plays. Only the participants are ours: the turn-taking, the routing of
calls, the environment and the verdict are tau2's.
"""

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import trajectories  # noqa: E402  (tau2_ready and telecom_data first, then tau2)

from tau2.agent.base_agent import HalfDuplexAgent  # noqa: E402
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage  # noqa: E402
from tau2.data_model.simulation import Info, Results  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.orchestrator.orchestrator import Orchestrator  # noqa: E402
from tau2.registry import registry  # noqa: E402
from tau2.user.user_simulator import UserSimulator  # noqa: E402
from tau2.user.user_simulator_base import HalfDuplexUser  # noqa: E402

DOMAIN = "telecom"
TEMPLATE = HERE.parents[0] / "fixtures/tau2/real-model-airline.json"


class Gold:
    """The gold actions both participants play from, and how far."""

    def __init__(self, actions):
        self.actions = actions
        self.next = 0

    def run_of(self, requestor):
        """The actions from the next one while they are `requestor`'s."""
        run = []
        while self.next < len(self.actions) and self.actions[self.next][2] == requestor:
            run.append(self.actions[self.next])
            self.next += 1
        return run


class GoldAgent(HalfDuplexAgent):
    def __init__(self, gold, tools, policy, said):
        super().__init__(tools=tools, domain_policy=policy)
        self.gold = gold
        self.said = said
        self.calls = 0

    def get_init_state(self, message_history=None):
        return None

    def generate_next_message(self, message, state):
        gold = self.gold
        if gold.next < len(gold.actions) and gold.actions[gold.next][2] == "assistant":
            name, arguments, _ = gold.actions[gold.next]
            gold.next += 1
            self.calls += 1
            call = ToolCall(id=f"call_{self.calls}", name=name, arguments=arguments)
            return AssistantMessage(role="assistant", content=None, tool_calls=[call]), state
        if gold.next < len(gold.actions):
            names = []
            for name, _, by in gold.actions[gold.next :]:
                if by != "user":
                    break
                names.append(name)
            text = f"Please do this on your side: {', '.join(names)}."
            return AssistantMessage(role="assistant", content=text), state
        return AssistantMessage(role="assistant", content=self.said), state


class GoldUser(HalfDuplexUser):
    def __init__(self, gold, opening):
        super().__init__(instructions=None, tools=None)
        self.gold = gold
        self.opening = opening
        self.spoke = False
        self.done = []
        self.calls = 0

    def get_init_state(self, message_history=None):
        return None

    @classmethod
    def is_stop(cls, message):
        return UserSimulator.is_stop(message)

    def generate_next_message(self, message, state):
        if not self.spoke:
            self.spoke = True
            return UserMessage(role="user", content=self.opening), state
        if self.done:
            names = ", ".join(self.done)
            self.done = []
            return UserMessage(role="user", content=f"I did that: {names}."), state
        run = self.gold.run_of("user")
        if not run:
            return UserMessage(role="user", content=trajectories.STOP), state
        calls = []
        for name, arguments, _ in run:
            self.calls += 1
            calls.append(
                ToolCall(id=f"user_{self.calls}", name=name, arguments=arguments, requestor="user")
            )
        self.done = [c.name for c in calls]
        return UserMessage(role="user", content=None, tool_calls=calls), state


def simulate(task, variant):
    environment = registry.get_env_constructor(DOMAIN)()
    gold = Gold([(a.name, dict(a.arguments), a.requestor) for a in task.evaluation_criteria.actions])
    if variant == "user_action_left_out":
        last = max(i for i, a in enumerate(gold.actions) if a[2] == "user")
        del gold.actions[last]
    agent = GoldAgent(gold, environment.get_tools(), environment.get_policy(), trajectories.answer(task))
    user = GoldUser(gold, trajectories.opening(task))
    orchestrator = Orchestrator(
        domain=DOMAIN,
        agent=agent,
        user=user,
        environment=environment,
        task=task,
        simulation_id=f"{DOMAIN}_{task.id}_{variant}",
    )
    simulation = orchestrator.run()
    simulation.reward_info = evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=EvaluationType.ALL,
        solo_mode=False,
        domain=DOMAIN,
    )
    return simulation


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tasks", type=int, default=6)
    args = parser.parse_args()
    tasks = [
        t
        for t in registry.get_tasks_loader(DOMAIN)(task_split_name="small")
        if trajectories.judged_without_llm(t)
        and any(a.requestor == "user" for a in t.evaluation_criteria.actions or [])
    ][: args.tasks]
    simulations = []
    for task in tasks:
        for trial, variant in enumerate(["gold", "user_action_left_out"]):
            simulation = simulate(task, variant)
            simulation.trial = trial
            simulations.append(simulation)
            print(f"{simulation.id}: {simulation.reward_info.reward}", file=sys.stderr)
    info = json.loads(TEMPLATE.read_text())["info"]
    info["num_trials"] = 2
    info["environment_info"]["domain_name"] = DOMAIN
    results = Results(info=Info.model_validate(info), tasks=tasks, simulations=simulations)
    args.out.write_text(results.model_dump_json(indent=1))


if __name__ == "__main__":
    main()
