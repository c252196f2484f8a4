"""Every family's steps/s and reset time beside the original it replaces, measured in one run.

Pairs, each in this process on the same stream of actions:

- ``BabyAI-Text-GoToLocal-v0`` (text observations, text commands) against minigrid's ``BabyAI-GoToLocal-v0``:
  random actions, and the expert's actions of seeded episodes replayed (both envs play the same episodes);
- ``Crafter-Text-v0`` (text, and text+pixels) against stock ``crafter.Env`` (which renders every step);
- ``Housekeep-Text-v0`` against the bare symbolic ``World`` under the same random admissible-command agent
  (the original runs on habitat-sim, which pip cannot install: the bare world is our own reference);
- the fastsim family (one ``Fastsim-Text-HardMaze-v0`` env, the batched stepper) against DESIGN.md's
  measurement of the C++ libfastsim (one robot, 3 lasers, ~500,000 steps/s on one core of these machines),
  which cannot be installed here: that figure is not from this run.

Steps are timed without the resets (a reset follows each episode's end, untimed); resets are timed apart.
Ours and the original alternate in rounds of the same number of steps (ABAB, the order swapped every round;
both play the same actions, and for BabyAI the same episodes), and the table keeps the medians and the
median of the per-round ratios: on a shared machine the absolute rates follow the neighbours' load, the
ratios much less.

Writes ``benchmarks/results/speed_table.json`` and the table in ``docs/performance.md`` (between its
``speed-table`` markers). Run: ``TEXTENVS_DATA_DIR=../shared/data python benchmarks/perf/speed_table.py
[--seconds 0.2] [--rounds 10] [--resets 8]`` (about a minute).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import io
import json
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401  (registers BabyAI-GoToLocal-v0)
import numpy as np
from common import write_result
from perf_crafter_text import crafter_text, stock_crafter
from perf_fastsim import CPP_ANCHOR_ROBOT_STEPS_PER_S
from perf_housekeep import random_agent

import textenvs  # noqa: F401  (registers the ids)
from textagents.bench.store import write_text_atomic
from textenvs.envs.babyai_text.env import COMMANDS as BABYAI_COMMANDS
from textenvs.envs.crafter_text import COMMANDS as CRAFTER_COMMANDS
from textenvs.envs.fastsim.simulator import RobotBatch, load_world
from textenvs.envs.housekeep.commands import parse
from textenvs.envs.housekeep.world import World

LOADED = (
    "a loaded machine (other processes running): the absolute rates are low and noisy; the ratios (same "
    "process, interleaved rounds) hold better"
)
DOC = Path(__file__).resolve().parents[2] / "docs" / "performance.md"
BEGIN, END = "<!-- speed-table:begin -->", "<!-- speed-table:end -->"
PACKAGES = ("textenvs", "gymnasium", "minigrid", "crafter", "numpy", "numba")


@dataclasses.dataclass
class Driver:
    """An env under a fixed stream of actions: ``step()`` plays the next one and says whether the episode
    ended; ``reset()`` starts the next episode."""

    step: Callable[[], bool]
    reset: Callable[[], object]


@dataclasses.dataclass
class Row:
    family: str
    ours: str
    original: str
    steps_per_s: float
    original_steps_per_s: float | None
    ratio: float | None
    reset_ms: float
    original_reset_ms: float | None
    note: str = ""


def run_steps(driver: Driver, steps: int) -> float:
    """Seconds that ``steps`` steps took, resets (at each episode's end) not counted."""
    elapsed = 0.0
    for _ in range(steps):
        start = time.perf_counter()
        done = driver.step()
        elapsed += time.perf_counter() - start
        if done:
            driver.reset()
    return elapsed


def paired_rates(ours: Driver, original: Driver | None, rounds: int, seconds: float) -> dict[str, Any]:
    """Median steps/s of both and median per-round ratio, over ``rounds`` rounds of about ``seconds`` each."""
    drivers = [ours] if original is None else [ours, original]
    for driver in drivers:
        driver.reset()
    slowest = max(run_steps(driver, 20) for driver in drivers)  # the same number of steps for both
    steps = max(10, round(seconds * 20 / slowest))
    if original is None:
        rates = [steps / run_steps(ours, steps) for _ in range(rounds)]
        return {"ours": statistics.median(rates), "original": None, "ratio": None}
    ours_rates, original_rates = [], []
    for round_ in range(rounds):
        pair = ((ours, ours_rates), (original, original_rates))
        for driver, rates in pair if round_ % 2 == 0 else reversed(pair):
            rates.append(steps / run_steps(driver, steps))
    return {
        "ours": statistics.median(ours_rates),
        "original": statistics.median(original_rates),
        "ratio": statistics.median(o / r for o, r in zip(ours_rates, original_rates, strict=True)),
    }


def reset_times(ours: Driver, original: Driver | None, resets: int) -> tuple[float, float | None]:
    """Median milliseconds of a reset, alternating ours and the original."""
    times: dict[int, list[float]] = {0: [], 1: []}
    drivers = [ours] if original is None else [ours, original]
    for _ in range(resets):
        for index, driver in enumerate(drivers):
            start = time.perf_counter()
            driver.reset()
            times[index].append(time.perf_counter() - start)
    medians = [1000 * statistics.median(t) if t else None for t in times.values()]
    return medians[0], medians[1]


# ----------------------------------------------------------------- drivers
def gym_driver(env: gym.Env, actions: list, seed: int = 0) -> Driver:
    """``env`` stepped through ``actions`` in a cycle; its first reset is seeded, the next continue the stream."""
    state = {"t": 0, "seed": seed}

    def step() -> bool:
        _obs, _reward, terminated, truncated, _info = env.step(actions[state["t"] % len(actions)])
        state["t"] += 1
        return terminated or truncated

    def reset() -> object:
        seed, state["seed"] = state["seed"], None
        return env.reset(seed=seed)

    return Driver(step, reset)


def replay_driver(env: gym.Env, episodes: list[list[int]], to_action: Callable[[int], Any]) -> Driver:
    """``env`` replaying recorded episodes (seed ``i``: the actions of ``episodes[i]``), in a cycle."""
    state = {"episode": -1, "t": 0}

    def step() -> bool:
        actions = episodes[state["episode"]]
        _obs, _reward, terminated, truncated, _info = env.step(to_action(actions[state["t"]]))
        state["t"] += 1
        return terminated or truncated or state["t"] == len(actions)

    def reset() -> object:
        state["episode"], state["t"] = (state["episode"] + 1) % len(episodes), 0
        return env.reset(seed=state["episode"])

    return Driver(step, reset)


def babyai_expert_episodes(count: int) -> list[list[int]]:
    """The minigrid actions of the BabyAI-Text expert on seeds ``0..count-1`` of GoToLocal."""
    env = gym.make("BabyAI-Text-GoToLocal-v0", action_mode="discrete")
    episodes = []
    for seed in range(count):
        obs, info = env.reset(seed=seed)
        expert = env.unwrapped.expert()
        expert.reset(obs, info)
        actions, done = [], False
        while not done:
            actions.append(int(expert.act(obs, info)))
            obs, _reward, terminated, truncated, info = env.step(actions[-1])
            done = terminated or truncated
        episodes.append(actions)
    return episodes


def crafter_driver(pair: tuple[Callable[[int], bool], Callable[[], object]], actions: list[int]) -> Driver:
    step, reset = pair
    state = {"t": 0}

    def play() -> bool:
        state["t"] += 1
        return step(actions[state["t"] % len(actions)])

    return Driver(play, reset)


def housekeep_env_driver(seed: int) -> Driver:
    env = gym.make("Housekeep-Text-v0")
    act = random_agent(seed)
    state: dict[str, Any] = {"seed": seed}

    def step() -> bool:
        _obs, _reward, terminated, truncated, state["info"] = env.step(act(state["info"]["admissible_commands"]))
        return terminated or truncated

    def reset() -> object:
        seed, state["seed"] = state["seed"], None
        _obs, state["info"] = env.reset(seed=seed)
        return state["info"]

    return Driver(step, reset)


def housekeep_world_driver(seed: int) -> Driver:
    """The same agent on the bare ``World`` (no Gymnasium, text, info or observation), a new episode
    generated and a new World built at each reset."""
    env = gym.make("Housekeep-Text-v0").unwrapped
    rng = np.random.default_rng(seed)
    act = random_agent(seed)
    state: dict[str, World] = {}

    def step() -> bool:
        world = state["world"]
        world.execute(0, parse(act(world.admissible_commands(0)), world.names, world.parsed))
        return world.steps >= env.max_steps or world.commands >= env.max_commands

    def reset() -> object:
        episode = env.config.choose_episode(rng, {})
        state["world"] = World(env.config.scene(episode.scene), episode, env.annotations, [episode.robot_start])
        return state["world"]

    return Driver(step, reset)


def fastsim_batch_driver(robots: int) -> Driver:
    """``RobotBatch.step`` (physics, lasers, bumpers; no text) of ``robots`` robots driving in circles."""
    batch = RobotBatch(load_world("hardmaze"), robots)
    actions = np.tile([3.0, 2.5], (robots, 1))
    batch.step(actions)  # compiles / loads the kernels

    def step() -> bool:
        batch.step(actions)
        return False

    return Driver(step, batch.reset)


# ----------------------------------------------------------------- the table
class Table:
    """The rows measured so far, with the settings every measurement uses."""

    def __init__(self, rounds: int, seconds: float, resets: int):
        self.rounds, self.seconds, self.resets = rounds, seconds, resets
        self.rows: list[Row] = []

    def add(
        self,
        family: str,
        ours: tuple[str, Callable[[], Driver]],
        original: tuple[str, Callable[[], Driver] | float],
        note: str,
        per_step: int = 1,
    ) -> None:
        """Measure ``ours`` against ``original``: a driver, or a rate from elsewhere (not timed here).
        ``per_step`` counts the robots a step moves (the rates are then robot-steps/s)."""
        ours_driver = ours[1]()
        original_driver = None if isinstance(original[1], float | int) else original[1]()
        rates = paired_rates(ours_driver, original_driver, self.rounds, self.seconds)
        reset_ms, original_reset_ms = reset_times(ours_driver, original_driver, self.resets)
        ours_rate = rates["ours"] * per_step
        if original_driver is None:
            original_rate, ratio = float(original[1]), ours_rate / float(original[1])
        else:
            original_rate, ratio = rates["original"] * per_step, rates["ratio"]
        row = Row(family, ours[0], original[0], ours_rate, original_rate, ratio, reset_ms, original_reset_ms, note)
        self.rows.append(row)
        print(row, flush=True)


def measure(table: Table) -> None:
    rng = np.random.default_rng(0)
    minigrid_raw = "minigrid BabyAI-GoToLocal-v0"
    ours = "BabyAI-Text-GoToLocal-v0, text"
    indices = rng.integers(0, len(BABYAI_COMMANDS), 10_000).tolist()
    with contextlib.redirect_stdout(io.StringIO()):  # minigrid prints each rejected mission
        table.add(
            "BabyAI-Text",
            (ours, lambda: gym_driver(gym.make("BabyAI-Text-GoToLocal-v0"), [BABYAI_COMMANDS[i] for i in indices])),
            (minigrid_raw, lambda: gym_driver(gym.make("BabyAI-GoToLocal-v0"), indices)),
            "random actions",
        )
        episodes = babyai_expert_episodes(30)
        table.add(
            "BabyAI-Text",
            (ours, lambda: replay_driver(gym.make("BabyAI-Text-GoToLocal-v0"), episodes, BABYAI_COMMANDS.__getitem__)),
            (minigrid_raw, lambda: replay_driver(gym.make("BabyAI-GoToLocal-v0"), episodes, int)),
            "the expert's actions on 30 seeded episodes, replayed by both",
        )

    actions = rng.integers(0, len(CRAFTER_COMMANDS), 10_000).tolist()
    for obs_mode in ("text", "text+pixels"):
        table.add(
            "Crafter-Text",
            (f"Crafter-Text-v0, {obs_mode}", lambda obs_mode=obs_mode: crafter_driver(crafter_text(obs_mode), actions)),
            ("crafter.Env (renders every step)", lambda: crafter_driver(stock_crafter(), actions)),
            "random actions; our reset generates the world with numba",
        )

    table.add(
        "Housekeep-Text",
        ("Housekeep-Text-v0, text", lambda: housekeep_env_driver(0)),
        ("bare symbolic World (ours)", lambda: housekeep_world_driver(0)),
        "random admissible commands; the original runs on habitat-sim, which pip cannot install: the reference "
        "is our own World without Gymnasium, text or info",
    )

    anchor = ("C++ libfastsim (DESIGN.md, not this run)", float(CPP_ANCHOR_ROBOT_STEPS_PER_S))
    note = "robot-steps/s; libfastsim cannot be installed here: the ratio is to DESIGN.md's 500,000 steps/s"
    circles = np.array([3.0, 2.5], np.float32)
    table.add(
        "fastsim",
        ("Fastsim-Text-HardMaze-v0, text", lambda: gym_driver(gym.make("Fastsim-Text-HardMaze-v0"), [circles])),
        anchor,
        note + ", one env driving in circles",
    )
    for robots, name in ((1, "batched stepper, 1 robot"), (1024, "batched stepper, 1,024 robots")):
        table.add(
            "fastsim", (name, lambda robots=robots: fastsim_batch_driver(robots)),
            anchor, note + " (physics, lasers, bumpers; no text)", per_step=robots,
        )  # fmt: skip


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=DOC.parent)
    return out.stdout.strip() or "unknown"


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}" if value >= 10 or digits == 0 else f"{value:.{max(digits, 2)}f}"


def markdown(result: dict[str, Any]) -> str:
    machine = result["machine"]
    lines = [
        f"Measured {result['measured_at']} by `python benchmarks/perf/speed_table.py` (commit "
        f"{result['commit']}) on {machine['cpu_model']}, {machine['cpus']} cores, Python {machine['python']}; "
        + ", ".join(f"{name} {version}" for name, version in result["packages"].items())
        + f". Load average {result['load_average'][0]:.1f} at the start, {result['load_average'][1]:.1f} at "
        "the end" + (f": {result['load_note']}" if result["load_note"] else "") + ".",
        "",
        "| family | ours | original | ours steps/s | original steps/s | ratio | ours reset ms | original reset ms |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for number, row in enumerate(result["rows"], start=1):
        lines.append(
            f"| {row['family']} | {row['ours']} [{number}] | {row['original']} | {_number(row['steps_per_s'])} "
            f"| {_number(row['original_steps_per_s'])} | {_number(row['ratio'], 2)} | {_number(row['reset_ms'], 1)} "
            f"| {_number(row['original_reset_ms'], 1)} |"
        )
    lines.append("")
    lines += [f"[{number}] {row['note']}." for number, row in enumerate(result["rows"], start=1)]
    return "\n".join(lines)


def write_doc(table: str) -> None:
    """Put ``table`` between the markers of docs/performance.md (the rest of the page is left as it is)."""
    text = DOC.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{DOC} has no {BEGIN} ... {END} block to put the table in")
    write_text_atomic(DOC, pattern.sub(lambda _: f"{BEGIN}\n{table}\n{END}", text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=0.2, help="seconds per env and round (about)")
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds per pair")
    parser.add_argument("--resets", type=int, default=8, help="timed resets per env")
    parser.add_argument("--no-doc", action="store_true", help="write the JSON only, not docs/performance.md")
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    table = Table(args.rounds, args.seconds, args.resets)
    measure(table)
    load_end = os.getloadavg()[0]
    busy = max(load_start, load_end) > 0.5 * (os.cpu_count() or 1)
    path = write_result(
        "speed_table",
        {
            "commit": git_commit(),
            "packages": {name: importlib.metadata.version(name) for name in PACKAGES},
            "settings": {"rounds": args.rounds, "seconds_per_round": args.seconds, "resets": args.resets},
            "load_average": [round(load_start, 2), round(load_end, 2)],
            "load_note": LOADED if busy else "",
            "rows": [dataclasses.asdict(row) for row in table.rows],
        },
    )
    print(f"-> {path}")
    if not args.no_doc:
        write_doc(markdown(json.loads(path.read_text())))
        print(f"-> {DOC}")


if __name__ == "__main__":
    main()
