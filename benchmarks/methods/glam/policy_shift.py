"""What PPO changed in GLAM's policy: π over the six commands before and after training, on the states
BabyAI's bot visits in evaluation episodes of each run's training level (``zero_shot_policy.py``'s measure).

    python benchmarks/methods/glam/policy_shift.py RUN_DIR [RUN_DIR ...] [--episodes 40] \
        --out benchmarks/methods/glam/results/cpu/policy_shift

Each run folder (agent ``glam`` or ``npae``) is rebuilt from its ``config.json``: the untrained policy
first, then its last checkpoint, score the same states with the run's own prompt. Writes OUT.json, OUT.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from zero_shot_policy import expert_states, policy_summary

from textagents.bench.store import write_json_atomic, write_text_atomic
from textagents.methods.core.config import config_from_dict
from textagents.methods.core.run_dir import RunDir
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.episodes import EVAL_SEED_OFFSET
from textagents.methods.glam.llm_learner import LLMLearner


def shift(run: Path, episodes: int) -> dict[str, Any]:
    run_dir = RunDir(run)
    config = config_from_dict(GlamConfig, run_dir.recorded()["config"], str(run / "config.json"))
    checkpoint = run_dir.load_checkpoint()
    if checkpoint is None:
        raise SystemExit(f"{run} has no checkpoint: nothing trained to compare")
    states = expert_states(config.env_id, episodes, EVAL_SEED_OFFSET, config.prompt_observations)
    learner = LLMLearner(config, config.model)
    try:
        untrained = policy_summary(learner.caller.score, states)
        learner.restore(checkpoint.state, checkpoint.tensors)
        trained = policy_summary(learner.caller.score, states)
    finally:
        learner.close()
    return {"run": run.name, "frames": checkpoint.state["frames"], "untrained": untrained, "trained": trained}


def markdown(results: list[dict[str, Any]]) -> str:
    commands = list(results[0]["untrained"]["mean_policy"])
    states = results[0]["untrained"]["states"]
    lines = [
        "# What PPO changed in GLAM's policy",
        "",
        f"π on the {states} states BabyAI's bot visits in evaluation episodes of the training level "
        "(`policy_shift.py`): the mean probability of each command, untrained → last checkpoint.",
        "",
        "| run | frames | " + " | ".join(commands) + " | π(bot's command) | argmax = bot's | entropy |",
        "|---|---:|" + "---|" * len(commands) + "---|---|---|",
    ]
    for r in results:
        before, after = r["untrained"], r["trained"]
        cells = [f"{before['mean_policy'][c]:.2f} → {after['mean_policy'][c]:.2f}" for c in commands]
        cells += [
            f"{before[k]:.2f} → {after[k]:.2f}"
            for k in ("mean_policy_of_expert_command", "argmax_is_expert", "entropy")
        ]
        lines.append(f"| {r['run']} | {r['frames']:,} | " + " | ".join(cells) + " |")
    bot = results[0]["untrained"]["expert_commands"]
    lines += ["", "The bot's commands on those states: " + ", ".join(f"{c} {n}" for c, n in bot.items()) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="GLAM run folders (agent glam or npae)")
    parser.add_argument("--episodes", type=int, default=40, help="bot episodes whose states are scored")
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    args = parser.parse_args()
    results = [shift(run, args.episodes) for run in args.runs]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out.with_suffix(".json"), results)
    write_text_atomic(args.out.with_suffix(".md"), markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
