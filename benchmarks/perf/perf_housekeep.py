"""Throughput of ``Housekeep-Text-v0``: env steps/s under a random admissible-command agent, the bare
symbolic world under the same agent (the "raw backend": habitat-sim, Housekeep's original backend, cannot
be installed from PyPI, so there is no original to time), and episodes generated per second.

Writes ``benchmarks/results/perf_housekeep.json`` (target >= 20,000 env steps/s).
Run: ``TEXTENVS_DATA_DIR=../shared/data python benchmarks/perf/perf_housekeep.py [--seconds 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from common import rate, write_result

import textenvs  # noqa: F401  (registers Housekeep-Text-v0)
from textenvs.envs.housekeep.commands import parse
from textenvs.envs.housekeep.generator import generate_episode
from textenvs.envs.housekeep.world import World

TARGET_STEPS_PER_SECOND = 20_000


def cpu_rate(step: Callable[[], None], min_seconds: float) -> float:
    """Calls per CPU-second of this process: on a shared machine, wall-clock rates mostly measure the
    neighbours."""
    calls, start = 0, time.process_time()
    while time.process_time() - start < min_seconds or calls < 100:
        step()
        calls += 1
    return calls / (time.process_time() - start)


def random_agent(seed: int) -> Callable[[list[str]], str]:
    """A uniformly random choice among admissible commands but the last, ``mission complete`` (so episodes
    run to truncation). It draws with Python's ``random.random`` (index = floor(u * n)): NumPy's
    ``Generator.integers`` costs about 5 us a call here and ``random.randrange`` 1.5 us, a tenth and a
    thirtieth of an env step, which would be the agent's time, not the env's."""
    uniform = random.Random(seed).random

    def act(admissible: list[str]) -> str:
        return admissible[int(uniform() * (len(admissible) - 1))]

    return act


def env_stepper(seed: int) -> Callable[[], None]:
    """One env step per call: a random agent's command, resetting when an episode ends."""
    env = gym.make("Housekeep-Text-v0")
    act = random_agent(seed)
    _, info = env.reset(seed=seed)
    state = {"info": info}

    def step() -> None:
        _, _, terminated, truncated, info = env.step(act(state["info"]["admissible_commands"]))
        if terminated or truncated:
            _, info = env.reset()
        state["info"] = info

    return step


def world_stepper(seed: int) -> Callable[[], None]:
    """The same agent on the bare ``World``: no Gymnasium wrapper, text, info or observation; a new
    episode is generated and a new World built when one runs out."""
    env = gym.make("Housekeep-Text-v0").unwrapped
    rng = np.random.default_rng(seed)  # for the episodes
    act = random_agent(seed)

    def new_world() -> World:
        episode = env.config.choose_episode(rng, {})
        return World(env.config.scene(episode.scene), episode, env.annotations, [episode.robot_start])

    state = {"world": new_world()}

    def step() -> None:
        world = state["world"]
        command = act(world.admissible_commands(0))
        world.execute(0, parse(command, world.names, world.parsed))
        if world.steps >= env.max_steps or world.commands >= env.max_commands:
            state["world"] = new_world()

    return step


def generator_stepper(seed: int) -> Callable[[], None]:
    rng = np.random.default_rng(seed)
    scenes = ("Benevolence_2_int", "Wainscott_0_int", "Beechwood_0_int", "Rs_int", "Pomaria_1_int")

    def step() -> None:
        generate_episode(scenes[int(rng.integers(len(scenes)))], "train", "seen", rng)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per rate and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each is kept")
    args = parser.parse_args()
    steppers = {
        "env_steps_per_second": env_stepper(0),
        "world_steps_per_second": world_stepper(0),
        "episodes_generated_per_second": generator_stepper(0),
    }
    best = dict.fromkeys(steppers, 0.0)
    best_cpu = dict.fromkeys(steppers, 0.0)
    for _ in range(args.rounds):
        for name, step in steppers.items():
            best[name] = max(best[name], rate(step, min_seconds=args.seconds))
            best_cpu[name] = max(best_cpu[name], cpu_rate(step, args.seconds))
    result = {
        "env": "Housekeep-Text-v0 (obs_mode=text, text actions, random admissible commands)",
        "agent": "uniform over info['admissible_commands'] but 'mission complete', drawn with Python's random",
        "baseline": "the bare symbolic World under the same agent (habitat-sim is not installable)",
        **{k: round(v, 1) for k, v in best.items()},
        **{k.replace("_per_second", "_per_cpu_second"): round(v, 1) for k, v in best_cpu.items()},
        "env_to_world_ratio": round(best["env_steps_per_second"] / best["world_steps_per_second"], 3),
        "target_env_steps_per_second": TARGET_STEPS_PER_SECOND,
        "meets_target": best["env_steps_per_second"] >= TARGET_STEPS_PER_SECOND,
        "load_average_1min": os.getloadavg()[0],  # wall-clock rates shrink on a shared machine
    }
    path = write_result("perf_housekeep", result)
    print(path.read_text())


if __name__ == "__main__":
    main()
