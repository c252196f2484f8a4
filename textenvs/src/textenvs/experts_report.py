"""Every environment played by its expert: the table ``textenvs experts`` prints."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import gymnasium as gym
from tqdm import tqdm

from textenvs.core.episode import run_episode
from textenvs.core.registration import EnvEntry

HEADER = ("id", "episodes", "success", "return", "steps", "progression")


def expert_row(entry: EnvEntry, episodes: int, seed: int) -> tuple:
    """Mean success, return, steps and progression of the expert over seeded episodes of one id."""
    env = gym.make(entry.id)
    try:
        results = [run_episode(env, env.unwrapped.expert(), seed=seed + i) for i in range(episodes)]
    finally:
        env.close()
    progression = [r.metrics.get("progression", float(r.success)) for r in results]
    return (
        entry.id,
        episodes,
        f"{statistics.fmean(r.success for r in results):.2f}",
        f"{statistics.fmean(r.episode_return for r in results):.3f}",
        f"{statistics.fmean(r.steps for r in results):.1f}",
        f"{statistics.fmean(progression):.2f}",
    )


def expert_table(entries: Sequence[EnvEntry], episodes: int = 1, seed: int = 0) -> tuple[str, int]:
    """The table for ``entries`` and how many ids failed to run."""
    from textenvs.cli import format_table

    rows, failures = [], 0
    for entry in tqdm(entries, desc="experts", unit="env"):
        missing = entry.missing_requirements()
        if missing:
            rows.append((entry.id, 0, f'skipped: pip install "textenvs[{entry.extra}]"', "", "", ""))
            continue
        try:
            rows.append(expert_row(entry, episodes, seed))
        except Exception as error:  # one broken id must not hide the others' results
            failures += 1
            rows.append((entry.id, 0, f"error: {type(error).__name__}: {error}"[:100], "", "", ""))
    return format_table(HEADER, rows), failures
