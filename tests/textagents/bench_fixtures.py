"""A small suite over two families (BabyAI-Text, fastsim) that every bench test plays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textagents.bench.costs import TIMING_FIELDS

SMALL_SUITE = """\
name: small
description: two families, two agents, a few seeds
seeds: {start: 0, count: 8}
envs:
  - id: BabyAI-Text-GoToLocal-v0
    kwargs: {max_steps: 40}
  - id: Fastsim-Text-HardMaze-v0
    kwargs: {max_steps: 25}
    seeds: [3, 5, 7]
agents:
  - {name: random, kind: random}
  - {name: expert, kind: expert}
"""
SMALL_SUITE_EPISODES = 2 * (8 + 3)


def write_suite(directory: Path, text: str = SMALL_SUITE, name: str = "small.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def episodes_without_timing(run_dir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The run's episode records by key, without their timings (the only thing that differs between runs)."""
    records = {}
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        for field in TIMING_FIELDS:
            record.pop(field)
        key = (record["agent"], record["env"], record["seed"])
        assert key not in records, f"episode {key} recorded twice"
        records[key] = record
    return records


def copy_timings(source: Path, run_dir: Path) -> None:
    """Give the episodes of ``run_dir`` the timings ``source`` recorded for the same episodes, keeping their order."""
    timings = {}
    for line in (source / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        timings[(record["agent"], record["env"], record["seed"])] = {f: record[f] for f in TIMING_FIELDS}
    lines = []
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        lines.append(json.dumps(record | timings[(record["agent"], record["env"], record["seed"])]) + "\n")
    (run_dir / "episodes.jsonl").write_text("".join(lines))


def report_files(run_dir: Path) -> dict[str, str]:
    return {name: (run_dir / name).read_text() for name in ("leaderboard.md", "leaderboard.csv", "summary.json")}
