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
from collections.abc import Callable, Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm import tqdm

import textenvs  # noqa: F401  (registers the ids)
from textagents.agents.prompts import GlamPrompt
from textagents.bench.store import write_text_atomic
from textagents.llm.transformers_backend import TransformersBackend

RESULTS = Path(__file__).parent / "results"

#: Scores each context's candidates: (contexts, candidates) -> one summed log-prob per candidate.
Scorer = Callable[[Sequence[str], Sequence[Sequence[str]]], Sequence[Sequence[float]]]


def expert_states(env_id: str, episodes: int, first_seed: int, prompt_observations: int = 3) -> list[dict]:
    """GLAM's prompt, the commands and the expert's command at every state BabyAI's bot visits in
    ``episodes`` episodes from ``first_seed`` on."""
    env = gym.make(env_id)
    expert = env.unwrapped.expert()
    prompt = GlamPrompt(prompt_observations)
    states = []
    for episode in range(episodes):
        obs, info = env.reset(seed=first_seed + episode)
        expert.reset(obs, info)
        prompt.reset(obs, info)
        done = False
        while not done:
            command = expert.act(obs, info)
            commands = list(info["admissible_commands"])
            states.append({"context": prompt.build(obs, info).text.rstrip(), "commands": commands, "expert": command})
            prompt.record(command)
            obs, _, terminated, truncated, info = env.step(command)
            done = terminated or truncated
    env.close()
    return states


def policy_summary(score: Scorer, states: list[dict], batch: int = 16) -> dict:
    """π (softmax of the summed log-probs of ``" " + command`` after the prompt, as the ``glam`` learner
    computes it) on each state, summarised against the expert's command."""
    policies = []
    for start in tqdm(range(0, len(states), batch), desc="states", unit="batch"):
        chunk = states[start : start + batch]
        scores = score([s["context"] for s in chunk], [[" " + c for c in s["commands"]] for s in chunk])
        for row in scores:
            row = np.asarray(row, dtype=np.float64)
            policies.append(np.exp(row - np.logaddexp.reduce(row)))
    commands = states[0]["commands"]
    expert_policy = [p[s["commands"].index(s["expert"])] for p, s in zip(policies, states, strict=True)]
    expert_is_argmax = [s["commands"][int(np.argmax(p))] == s["expert"] for p, s in zip(policies, states, strict=True)]
    return {
        "states": len(states),
        "mean_policy": dict(zip(commands, np.mean(policies, axis=0).round(4).tolist(), strict=True)),
        "expert_commands": dict(Counter(s["expert"] for s in states)),
        "argmax_is_expert": float(np.mean(expert_is_argmax)),
        "mean_policy_of_expert_command": float(np.mean(expert_policy)),
        "uniform_policy_of_expert_command": 1 / len(commands),
        "entropy": float(np.mean([-(p * np.log(p)).sum() for p in policies])),
    }


def measure(model: str, env_id: str, episodes: int, first_seed: int) -> dict:
    summary = policy_summary(TransformersBackend(model).score, expert_states(env_id, episodes, first_seed))
    return {"model": model, "env_id": env_id, "episodes": episodes, **summary}


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
