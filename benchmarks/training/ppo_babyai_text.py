"""Training benchmark: PPO with text features on ``BabyAI-Text-GoToRedBallGrey-v0``.

Trains with ``textagents.sb3.train`` (hashed bag-of-words or SBERT features of the mission and the GLAM
caption), records every training episode, and writes the learning curve — success rate and return per
window of episodes against timesteps, with the random agent's success rate measured in the same run as the
baseline — to ``benchmarks/results/train_ppo_babyai_text.json`` and ``.svg``.
Run: ``python benchmarks/training/ppo_babyai_text.py [--timesteps 100000] [--features bow] [--save DIR]``;
``--save`` keeps the trained run (``model.pth``, ``model.json``, ``config.json``, ``learning_curve.json``) in
``DIR``, as the leaderboard's PPO baseline in ``benchmarks/baselines/`` was made.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

import textenvs  # noqa: F401  (registers the ids)
from textagents.agents import RandomAgent, play_episode
from textagents.sb3.train import TrainConfig, evaluate, train

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perf"))
from common import RESULTS_DIR, write_result

ENV_ID = "BabyAI-Text-GoToRedBallGrey-v0"


class EpisodeLog(BaseCallback):
    """(timestep, return, success) of every finished training episode."""

    def __init__(self):
        super().__init__()
        self.episodes: list[tuple[int, float, bool]] = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "episode" in info:
                self.episodes.append((self.num_timesteps, float(info["episode"]["r"]), bool(info.get("success"))))
        return True


def curve(episodes: list[tuple[int, float, bool]], window: int) -> list[dict[str, float]]:
    points = []
    for end in range(window, len(episodes) + 1, window):
        chunk = episodes[end - window : end]
        points.append(
            {
                "timesteps": chunk[-1][0],
                "success_rate": float(np.mean([s for _, _, s in chunk])),
                "mean_return": float(np.mean([r for _, r, _ in chunk])),
            }
        )
    return points


def svg_plot(points: list[dict[str, float]], baseline: float, title: str) -> str:
    """A self-contained SVG line chart of success rate against timesteps (no plotting dependency)."""
    width, height, pad = 640, 400, 60
    last = max(p["timesteps"] for p in points)

    def xy(t: float, y: float) -> tuple[float, float]:
        return pad + (width - 2 * pad) * t / last, height - pad - (height - 2 * pad) * y

    path = " ".join(
        f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}"
        for i, (x, y) in enumerate(xy(p["timesteps"], p["success_rate"]) for p in points)
    )
    _, base_y = xy(0, baseline)
    ticks = "".join(
        f'<text x="{pad - 8}" y="{xy(0, v)[1] + 4:.1f}" text-anchor="end" font-size="12">{v:.1f}</text>'
        f'<line x1="{pad}" y1="{xy(0, v)[1]:.1f}" x2="{width - pad}" y2="{xy(0, v)[1]:.1f}" stroke="#eee"/>'
        for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">'
        f'<rect width="100%" height="100%" fill="white"/>{ticks}'
        f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="15">{title}</text>'
        f'<text x="{width / 2}" y="{height - 15}" text-anchor="middle" font-size="12">timesteps (0 to {last})</text>'
        f'<text x="16" y="{height / 2}" font-size="12" transform="rotate(-90 16 {height / 2})">success rate</text>'
        f'<line x1="{pad}" y1="{base_y:.1f}" x2="{width - pad}" y2="{base_y:.1f}" stroke="#999" '
        'stroke-dasharray="6 4"/>'
        f'<text x="{width - pad}" y="{base_y - 6:.1f}" text-anchor="end" font-size="11" fill="#666">random agent</text>'
        f'<path d="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/></svg>\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--features", default="bow", choices=["bow", "sbert"])
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--window", type=int, default=100, help="episodes per point of the curve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="keep the trained run in this (new) directory")
    args = parser.parse_args()
    torch.set_num_threads(1)

    env = gym.make(ENV_ID)
    random_success = float(np.mean([play_episode(env, RandomAgent(seed=s), seed=s).success for s in range(200)]))

    log = EpisodeLog()
    config = TrainConfig(
        ENV_ID,
        algo="ppo",
        features=args.features,
        total_timesteps=args.timesteps,
        n_envs=args.n_envs,
        seed=args.seed,
        checkpoint_every=args.timesteps,
        algo_kwargs={"n_steps": 128, "ent_coef": 0.01},
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.save or Path(scratch)
        summary = train(config, run_dir, callbacks=[log])
        seconds = time.perf_counter() - start
        final = evaluate(run_dir, episodes=100, seed=100_000)
        final_sampled = evaluate(run_dir, episodes=100, seed=100_000, deterministic=False)
        points = curve(log.episodes, args.window)
        if args.save:
            shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
            shutil.rmtree(run_dir / "tensorboard", ignore_errors=True)
            (run_dir / "learning_curve.json").write_text(json.dumps(points, indent=1) + "\n")
    result = {
        "env_id": ENV_ID,
        "algo": "ppo",
        "features": args.features,
        "timesteps": summary["timesteps"],
        "training_seconds": seconds,
        "episodes": len(log.episodes),
        "random_agent_success_rate": random_success,
        "final_evaluation": {"most_likely_actions": final, "sampled_actions": final_sampled},
        "curve": points,
    }
    write_result("train_ppo_babyai_text", result)
    title = f"PPO + {args.features} text features on {ENV_ID}"
    (RESULTS_DIR / "train_ppo_babyai_text.svg").write_text(svg_plot(points, random_success, title))
    print(
        f"success after {summary['timesteps']} steps: {final_sampled['success_rate']:.2f} sampled, "
        f"{final['success_rate']:.2f} most likely actions (random agent {random_success:.2f})"
    )


if __name__ == "__main__":
    main()
