"""BK-Goal's ``original`` rule per frame on BabyAI-Text (two phrasings of the RedBall mission, so the library has
6 rounds and the history is compared with them): the history embedded only when some round's goals pass the
threshold (this checkout's ``NearestGoalsPotential``) against the rule as the original writes it, which embeds
the episode's last 5 steps described and the transition's caption at every frame (written out here, as
``test_bk_goal.py``'s reference is).

The library is a run's: its ``goals.json`` (``--goals``) and the samples its ``labelling_seed`` draws (cpu.yaml's
rounds and samples). A random policy's ``--frames`` frames (seed 0), the episode's last 5 steps as the shaping
wrapper keeps them; each arm a fresh ``SentenceEmbedder`` (all-MiniLM-L6-v2, its cache empty), one torch
thread, arms alternating over ``--rounds``: processor and wall time per frame, how many frames had their history
embedded, and the largest difference in Φ between the arms.

Writes ``benchmarks/results/perf_bk_goal_babyai.json``.
Run: ``python benchmarks/perf/perf_bk_goal_babyai.py --goals RUN/goals.json [--frames 400] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from common import write_result
from perf_bk_goal import frames, timing_fields

from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import action_name, discrete_commands
from textagents.methods.bk.goal_potential import (
    NEAREST,
    GoalKnowledge,
    NearestGoalsPotential,
    transition_caption,
    unit_rows,
)
from textagents.methods.bk.goal_prompt import describe_steps
from textagents.methods.bk.samples import Step
from textagents.sb3.features import SentenceEmbedder

CONFIG = Path(__file__).resolve().parents[1] / "methods" / "bk" / "cpu.yaml"


class OriginalRule:
    """The original's rule as written (``models/reward_provider.py:72-98``): the history and the transition's
    caption embedded at every frame, the 3 nearest rounds' goals compared with the caption."""

    def __init__(self, rounds: list, embed: Callable[[list[str]], np.ndarray], threshold: float, commands: list[str]):
        self.embed, self.threshold, self.commands = embed, threshold, commands
        self.contexts = unit_rows(embed([context for context, _ in rounds]))
        self.goals = [unit_rows(embed(list(goals))) if goals else np.zeros((0, 0)) for _, goals in rounds]

    def __call__(self, obs: dict[str, Any], info: dict[str, Any]) -> float:
        mission, text = str(obs["mission"]), str(obs["text"])
        earlier = [Step(mission, action_name(a, self.commands), str(o["text"]), 0.0, None) for a, o in info["history"]]
        previous = earlier[-1].observation if earlier else None
        caption = transition_caption(previous, action_name(info.get("action"), self.commands), text)
        query, last = unit_rows(self.embed([describe_steps(mission, earlier), caption]))
        nearest = np.argsort(self.contexts @ query)[-NEAREST:]
        goals = [self.goals[i] for i in nearest if len(self.goals[i])]
        best = float((np.concatenate(goals) @ last).max()) if goals else 0.0
        return best if best > self.threshold else 0.0


def no_llm() -> Any:
    raise RuntimeError("the goals come from --goals: no LLM is asked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--goals", type=Path, required=True, help="a BK-Goal run's goals.json")
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = yaml.safe_load(CONFIG.read_text())
    config = BKConfig(
        env_id=settings["env_id"], shaping="goal", goal_rounds=settings["goal_rounds"],
        goal_samples=settings["goal_samples"],
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        knowledge = GoalKnowledge(config, Path(folder), no_llm)
        knowledge.restore({"proposals": json.loads(args.goals.read_text())}, {})
        missions = list(knowledge.proposals)
        rounds = knowledge.library(missions[0])
    samples = frames(args.frames, config.env_id)
    commands = discrete_commands(config.env_id)
    threshold = config.goal_similarity
    seconds: dict[str, dict[str, list[float]]] = {arm: {"cpu": [], "wall": []} for arm in ("original", "ours")}
    phis: dict[str, list[float]] = {}
    histories: list[int] = []
    for repetition in range(args.rounds):
        for arm in seconds:
            embedder, asked = SentenceEmbedder(), []

            def embed(texts, embedder=embedder, asked=asked):
                asked.extend(texts)
                return embedder(texts)

            if arm == "original":
                potential: Any = OriginalRule(rounds, embed, threshold, commands)
            else:
                potential = NearestGoalsPotential(lambda mission: rounds, embed, threshold, commands)
                potential(*samples[0])  # the library's embeddings, outside the timing (OriginalRule's: above)
            asked.clear()
            cpu, wall = time.process_time(), time.perf_counter()
            phis[arm] = [potential(obs, info) for obs, info in samples[1:]]
            seconds[arm]["cpu"].append((time.process_time() - cpu) / (len(samples) - 1))
            seconds[arm]["wall"].append((time.perf_counter() - wall) / (len(samples) - 1))
            if arm == "ours":  # a history's description starts with the mission; a caption does not
                histories.append(sum(text.startswith("The agent's mission:") for text in asked))
            timing = {k: round(v[-1] * 1000, 1) for k, v in seconds[arm].items()}
            print(repetition, arm, timing, "ms a frame", flush=True)
    result = {
        "env_id": config.env_id,
        "goals": str(args.goals),
        "library_goals": [list(goals) for _, goals in rounds],
        "threshold": threshold,
        "frames": args.frames,
        "rounds": args.rounds,
        "torch_threads": 1,
        "frames_history_embedded_ours": histories[-1],
        "frames_with_phi_above_0": sum(p > 0 for p in phis["original"]),
        "max_phi_difference": max(abs(a - b) for a, b in zip(phis["original"], phis["ours"], strict=True)),
        **timing_fields(seconds, "original", "ours"),
    }
    print(write_result("perf_bk_goal_babyai", result).read_text())


if __name__ == "__main__":
    main()
