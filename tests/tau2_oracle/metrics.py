"""tau2's own metrics of a Results JSON, to check `toolgauge report tau2`.

    metrics.py results DOMAIN OUT [--tasks N] [--trials K]
        write OUT: a whole tau2 Results JSON of K conversations of each of
        the domain's first N tasks judged without an NL judge, made as
        trajectories.py makes them (task i: its gold actions i % K + 1
        times, then its mistakes), each scored by tau2's evaluate_simulation
    metrics.py compute RESULTS
        print tau2's compute_metrics of RESULTS as JSON, and each reward
        component's pass rate as analyze_reward counts it (over the
        simulations that weigh it)
"""

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import trajectories  # noqa: E402  (tau2_ready first, then tau2)

from tau2.data_model.simulation import Info, Results, SimulationRun, TerminationReason  # noqa: E402
from tau2.environment.toolkit import ToolType, get_tool_types  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.metrics.agent_metrics import compute_metrics  # noqa: E402
from tau2.registry import registry  # noqa: E402

# The run information of tau2's own run of the real model: what tau2 writes.
TEMPLATE = HERE.parents[0] / "fixtures/tau2/real-model-airline.json"


def results(domain, tasks, trials):
    environment = registry.get_env_constructor(domain)()
    tools = {t.name: t for t in environment.get_tools()}
    kinds = get_tool_types(environment.tools)
    writes = {n for n, kind in kinds.items() if kind == ToolType.WRITE}
    chosen = [t for t in registry.get_tasks_loader(domain)() if trajectories.judged_without_llm(t)]
    chosen = chosen[:tasks]
    simulations = []
    for i, task in enumerate(chosen):
        made = trajectories.variants(task, tools, writes)
        gold, mistakes = made[0], made[1:]
        played = [gold] * (i % trials + 1) + mistakes
        if len(played) < trials:
            raise SystemExit(f"task {task.id} has too few variants for {trials} trials")
        for trial, (variant, actions, said) in enumerate(played[:trials]):
            messages = trajectories.conversation(domain, task, actions, said)
            simulation = SimulationRun(
                id=f"{domain}_{task.id}_{trial}_{variant}",
                task_id=task.id,
                trial=trial,
                start_time="",
                end_time="",
                duration=0.0,
                termination_reason=TerminationReason.USER_STOP,
                messages=messages,
                agent_cost=0.0,
                user_cost=0.0,
            )
            simulation.reward_info = evaluate_simulation(
                simulation=simulation,
                task=task,
                evaluation_type=EvaluationType.ALL,
                solo_mode=False,
                domain=domain,
            )
            simulations.append(simulation)
    info = json.loads(TEMPLATE.read_text())["info"]
    info["num_trials"] = trials
    info["environment_info"]["domain_name"] = domain
    return Results(info=Info.model_validate(info), tasks=chosen, simulations=simulations)


def metrics(path):
    loaded = Results.load(path)
    computed = compute_metrics(loaded)
    out = computed.model_dump()
    out["pass_hat_ks"] = {str(k): v for k, v in computed.pass_hat_ks.items()}
    components = {}
    for simulation in loaded.simulations:
        info = simulation.reward_info
        for kind in info.reward_basis or []:
            name = kind.value
            passed = (info.reward_breakdown or {}).get(kind, 0.0) >= 1 - 1e-6
            count = components.setdefault(name, {"passed": 0, "of": 0})
            count["passed"] += int(passed)
            count["of"] += 1
    for count in components.values():
        count["rate"] = count["passed"] / count["of"]
    out["components"] = components
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("results")
    made.add_argument("domain")
    made.add_argument("out", type=Path)
    made.add_argument("--tasks", type=int, default=4)
    made.add_argument("--trials", type=int, default=3)
    computed = commands.add_parser("compute")
    computed.add_argument("results", type=Path)
    args = parser.parse_args()
    if args.command == "results":
        written = results(args.domain, args.tasks, args.trials)
        args.out.write_text(written.model_dump_json(indent=1))
    else:
        print(json.dumps(metrics(args.results), indent=1, default=str))


if __name__ == "__main__":
    main()
