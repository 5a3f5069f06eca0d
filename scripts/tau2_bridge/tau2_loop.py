"""tau2's own orchestrator on one recorded conversation: the baseline of
scripts/tau2_bridge/overhead.sh.

Per trial, as `tau2 run` does it: the domain's environment made, tau2's
`Orchestrator` run with an agent and a user that say what the recording
says (no model, no network), each call answered by the environment, and
the simulation judged by `evaluate_simulation`. Prints JSON: the trials'
mean wall time in milliseconds (of which the evaluation), the
environment's making apart (toolgauge pays it in the bridge's start-up),
and the verdict of the last trial.

    VENV/bin/python scripts/tau2_bridge/tau2_loop.py RESULTS.json SIMULATION_ID TRIALS
"""

import json
import sys
import time

import tau2_ready  # before tau2: see its doc

tau2_ready.quiet("WARNING")

# isort: split
from tau2.agent.base_agent import HalfDuplexAgent
from tau2.agent.llm_agent import LLMAgent
from tau2.data_model.message import AssistantMessage, UserMessage
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.registry import registry
from tau2.user.user_simulator import UserSimulator
from tau2.user.user_simulator_base import HalfDuplexUser


class RecordedAgent(HalfDuplexAgent):
    """Says the recorded assistant messages, in order, each made when said
    (tau2 orders a simulation's messages by the time they were made)."""

    def __init__(self, tools, policy, said):
        super().__init__(tools=tools, domain_policy=policy)
        self.said = list(said)

    def get_init_state(self, message_history=None):
        return None

    def generate_next_message(self, message, state):
        said = self.said.pop(0)
        reply = AssistantMessage(
            role="assistant", content=said.get("content"), tool_calls=said.get("tool_calls")
        )
        return reply, state

    @classmethod
    def is_stop(cls, message):
        return LLMAgent.is_stop(message)


class RecordedUser(HalfDuplexUser):
    """Says the recorded user messages, in order."""

    def __init__(self, said):
        super().__init__(instructions=None, tools=None)
        self.said = list(said)

    def get_init_state(self, message_history=None):
        return None

    def generate_next_message(self, message, state):
        return UserMessage(role="user", content=self.said.pop(0).get("content")), state

    @classmethod
    def is_stop(cls, message):
        return UserSimulator.is_stop(message)


def recorded(simulation):
    """The recording's messages after tau2's greeting: the agent's, the user's."""
    messages = simulation["messages"][1:]
    agent = [m for m in messages if m["role"] == "assistant"]
    user = [m for m in messages if m["role"] == "user"]
    return agent, user


def main():
    path, simulation_id, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
    results = json.load(open(path))
    simulation = next(s for s in results["simulations"] if s["id"] == simulation_id)
    domain = results["info"]["environment_info"]["domain_name"]
    task = next(t for t in registry.get_tasks_loader(domain)() if t.id == simulation["task_id"])
    agent_said, user_said = recorded(simulation)
    making = running = judging = 0.0
    for _ in range(trials):
        started = time.perf_counter()
        environment = registry.get_env_constructor(domain)()
        made = time.perf_counter()
        orchestrator = Orchestrator(
            domain=domain,
            agent=RecordedAgent(environment.get_tools(), environment.get_policy(), agent_said),
            user=RecordedUser(user_said),
            environment=environment,
            task=task,
        )
        run = orchestrator.run()
        conversed = time.perf_counter()
        info = evaluate_simulation(
            simulation=run,
            task=task,
            evaluation_type=EvaluationType.ALL,
            solo_mode=False,
            domain=domain,
        )
        ended = time.perf_counter()
        making += made - started
        running += ended - made
        judging += ended - conversed
    print(
        json.dumps(
            {
                "ms_per_trial": running / trials * 1e3,
                "environment_ms": making / trials * 1e3,
                "of_which_evaluation_ms": judging / trials * 1e3,
                "reward": info.reward,
                "recorded_reward": simulation["reward_info"]["reward"],
                "termination_reason": run.termination_reason.value,
            }
        )
    )


if __name__ == "__main__":
    main()
