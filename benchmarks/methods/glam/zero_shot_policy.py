"""Where GLAM starts from: the untrained LLM policy's distribution over the six commands on the states an expert
visits, against the expert's command.

    python benchmarks/methods/glam/zero_shot_policy.py [--model smollm2-135m-instruct] [--episodes 20]

Follows BabyAI's bot on ``--env`` and, at every step, scores GLAM's prompt with the six commands exactly as the
``glam`` learner does (π = softmax of the summed log-probs). Writes ``results/zero_shot_policy.{json,md}``: the
mean π of each command, how often π's most likely command is the expert's, and the mean π of the expert's command
(a uniform policy gives 1/6).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import textenvs  # noqa: F401  (registers the ids)
from textagents.agents.prompts import GlamPrompt
from textagents.bench.store import write_text_atomic
from textagents.llm.transformers_backend import TransformersBackend

RESULTS = Path(__file__).parent / "results"


def measure(model: str, env_id: str, episodes: int, first_seed: int) -> dict:
    backend = TransformersBackend(model)
    env = gym.make(env_id)
    expert = env.unwrapped.expert()
    prompt = GlamPrompt()
    rows = []
    for episode in tqdm(range(episodes), desc="episodes", unit="episode"):
        obs, info = env.reset(seed=first_seed + episode)
        expert.reset(obs, info)
        prompt.reset(obs, info)
        done = False
        while not done:
            commands = list(info["admissible_commands"])
            context = prompt.build(obs, info).text.rstrip()
            scores = np.asarray(backend.score([context], [[" " + c for c in commands]])[0], dtype=np.float64)
            policy = np.exp(scores - np.logaddexp.reduce(scores))
            command = expert.act(obs, info)
            rows.append({"commands": commands, "policy": policy.tolist(), "expert": command})
            prompt.record(command)
            obs, _, terminated, truncated, info = env.step(command)
            done = terminated or truncated
    env.close()
    commands = rows[0]["commands"]
    mean_policy = np.mean([r["policy"] for r in rows], axis=0)
    expert_policy = [r["policy"][r["commands"].index(r["expert"])] for r in rows]
    expert_is_argmax = [r["commands"][int(np.argmax(r["policy"]))] == r["expert"] for r in rows]
    return {
        "model": model,
        "env_id": env_id,
        "episodes": episodes,
        "states": len(rows),
        "mean_policy": dict(zip(commands, mean_policy.round(4).tolist(), strict=True)),
        "expert_commands": dict(Counter(r["expert"] for r in rows)),
        "argmax_is_expert": float(np.mean(expert_is_argmax)),
        "mean_policy_of_expert_command": float(np.mean(expert_policy)),
        "uniform_policy_of_expert_command": 1 / len(commands),
    }


def markdown(result: dict) -> str:
    lines = [
        f"# GLAM's starting point: the untrained {result['model']} policy on {result['env_id']}",
        "",
        f"{result['states']} states of {result['episodes']} episodes that BabyAI's bot plays; at each, π over the six",
        "commands as the `glam` learner computes it (softmax of the summed log-probs after GLAM's prompt).",
        "",
        "| command | mean π | the expert's choice (share of states) |",
        "|---|---:|---:|",
    ]
    for command, p in result["mean_policy"].items():
        share = result["expert_commands"].get(command, 0) / result["states"]
        lines.append(f"| {command} | {p:.3f} | {share:.3f} |")
    lines += [
        "",
        f"- π's most likely command is the expert's on {result['argmax_is_expert']:.1%} of the states;",
        f"- the mean π of the expert's command is {result['mean_policy_of_expert_command']:.3f} "
        f"(a uniform policy: {result['uniform_policy_of_expert_command']:.3f}).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--env", default="BabyAI-Text-GoToRedBallNoDists-v0")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = measure(args.model, args.env, args.episodes, args.seed)
    RESULTS.mkdir(exist_ok=True)
    write_text_atomic(RESULTS / "zero_shot_policy.json", json.dumps(result, indent=2) + "\n")
    write_text_atomic(RESULTS / "zero_shot_policy.md", markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
