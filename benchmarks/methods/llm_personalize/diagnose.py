"""Where a cpu.yaml run's planners fail, from its recorded LLM calls alone (no model): replays the
zero-shot evaluation, the first evaluation after imitation and the first self-training rollouts, and
counts per stage the planning calls that moved objects, raised or lowered the number of correctly placed
objects (self-training keeps only the raising ones), the commands played and how picks and places ended.

Run: ``python benchmarks/methods/llm_personalize/diagnose.py RUN_DIR`` (a run made with ``baselines: []``
by the current planner: ``results/cpu`` predates the original's prompt ending and sampling, so its recorded
calls are not found any more; needs the Housekeep data). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from textagents.llm.record import ReplayBackend
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.planner import play
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.sampling import paper_split_indices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run", type=Path)
    args = parser.parse_args()
    config = LLMPersonalizeConfig(**json.loads((args.run / "config.json").read_text())["config"])
    if config.baselines:
        raise SystemExit("diagnose replays runs made with baselines: [] (the baselines' calls come first otherwise)")
    backend = ReplayBackend(args.run / "llm_calls.jsonl")
    settings = {"seed": config.seed, "sampling": config.sampling(), "rules": config.plan_rules()}
    scenes = config.scenes
    evaluation = [
        (s, i)
        for split in ("train", "test")
        for s in scenes
        for i in paper_split_indices(split)[: config.eval_episodes]
    ]
    rollouts = [(s, i) for s in scenes for i in paper_split_indices("train")[: config.self_training_rollouts]]
    print(
        "| stage | episodes | planning calls | calls that moved objects | raised the correct count | lowered it "
        "| mission complete | picks ok / played | places ok / played |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for stage, jobs in (
        ("zero-shot", evaluation),
        ("after imitation", evaluation),
        ("self-training rollouts", rollouts),
    ):
        runs = play(
            lambda: HousekeepTextEnv(scenes=list(scenes), episode_source="llm_personalize"), backend, jobs, **settings
        )
        calls = [c for r in runs for c in r.calls]
        played = [(cmd, ok) for c in calls for cmd, ok in c.played if cmd]
        picks = Counter(ok for cmd, ok in played if cmd.startswith("pick up"))
        places = Counter(ok for cmd, ok in played if cmd.startswith("place"))
        print(
            f"| {stage} | {len(runs)} | {len(calls)} | {sum(bool(c.moves) for c in calls)} "
            f"| {sum(len(c.correct_after) > len(c.correct_before) for c in calls)} "
            f"| {sum(len(c.correct_after) < len(c.correct_before) for c in calls)} "
            f"| {sum(cmd == 'mission complete' for cmd, _ in played)} "
            f"| {picks[True]} / {sum(picks.values())} | {places[True]} / {sum(places.values())} |"
        )


if __name__ == "__main__":
    main()
