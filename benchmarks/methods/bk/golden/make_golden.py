"""Golden numbers for BK, made by the original's own code (``mansicer/background-knowledge-rl`` at commit
5f62882) on fixed inputs, for ``tests/textagents/methods/test_bk_shaping.py`` and ``test_bk_goal.py``. Not
imported by the package; the original's code is not copied into the project (it has no license): its
``RewardForwardFilter`` is imported from a checkout of it, its ``RunningMeanStd`` is gymnasium 0.29's
(``utils/normalizer.py:1`` imports it), and the few lines that run them or cannot run on their own (they sit
in ``train_rs.py``'s training loop, or in ``GoalReward``, which needs its sentence model) are transcribed
below, cited line by line.

``bk_shaping.json``, the ``original`` shaping form:
The stream: 3 envs, 4 rollouts of 5 steps. ``phi[u][t][e]`` is the potential of the observation env e's
action at step t of rollout u is taken from (the original's ``computed_rewards``, ``train_rs.py:166-168``);
``ends[u][t][e]`` says how that step ends the episode (0 no, 1 terminated, 2 truncated by a time limit) and
``reward`` is the env's reward. The original's arithmetic never looks at the episode ends (its lag runs across
them); the tests use them to drive envs whose observations carry this stream, through our wrappers. The
original holds these numbers in float32 tensors; here they are float64 (differences of ~1e-7).

``bk_goal.json``, BK-Goal's reward (``models/reward_provider.py:72-102``) on fixed embeddings in place of
the sentence model's: a library of 6 rounds (their captions' embeddings, ``key_embeddings``, and their goals,
``goal_library``, indices into ``goals_embeddings``), and 6 calls, each the embedding of the history's
caption (``query``) and of the last transition's (``caption``); the rewards at the original's threshold 0.85.

``bk_pref_window.json``, BK-Pref's window at run time (``train_rs.py:73, 96-98, 130-135, 152-153``;
``models/reward_provider.py:33``; ``models/preference_transformer.py:46``), transcribed on symbols: 2 envs,
12 steps, episodes ending as ``PREF_ENDS``; the observation at step k of an env's episode e is [e, k], the
action taken from it [e, k] too. ``buffer_obs[t][env]`` / ``buffer_actions`` are the horizon + 1 = 6 slots
of the original's window at step t (oldest first), ``model_obs`` / ``model_actions`` the 5 its preference
model reads (its ``states[:, :-1]`` and ``actions[:, :-1]``). ``make_golden.py --pref-window`` writes it
alone (plain python, no checkout needed).

Run (a throwaway environment with numpy and gymnasium 0.29, the original checked out at 5f62882):

    git clone https://github.com/mansicer/background-knowledge-rl /tmp/bk-original
    git -C /tmp/bk-original checkout 5f62882
    python -m venv /tmp/bkgold && /tmp/bkgold/bin/pip install numpy gymnasium==0.29.1
    /tmp/bkgold/bin/python benchmarks/methods/bk/golden/make_golden.py /tmp/bk-original
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[4] / "tests" / "textagents" / "methods" / "golden"
COMMIT = "5f62882"
GAMMA = 0.99  # utils/config.py:38
EXT_COEF = 10.0  # utils/config.py:62, 68, 76
ENVS, STEPS, ROLLOUTS = 3, 5, 4
# (rollout, step, env): how the step ends its episode; 1 terminated (with a reward), 2 truncated
ENDS = {(0, 2, 0): 1, (0, 4, 1): 2, (1, 1, 2): 1, (1, 3, 0): 1, (2, 0, 1): 1, (2, 4, 2): 2, (3, 2, 0): 2, (3, 3, 1): 1}


def stream() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(32)
    phi = np.round(rng.normal(1.0, 2.0, size=(ROLLOUTS, STEPS, ENVS)), 3)
    phi[1, :, 1] = 0.0  # a stretch of zero potentials
    ends = np.zeros((ROLLOUTS, STEPS, ENVS), dtype=int)
    reward = np.zeros((ROLLOUTS, STEPS, ENVS))
    for (u, t, e), kind in ENDS.items():
        ends[u, t, e] = kind
        reward[u, t, e] = round(1.0 - 0.9 * (t + 1) / 20, 3) if kind == 1 else 0.0
    return phi, ends, reward


def original_rollouts(phi: np.ndarray, reward: np.ndarray) -> list[dict[str, list]]:
    from gymnasium.wrappers.normalize import RunningMeanStd  # utils/normalizer.py:1
    from utils.normalizer import RewardForwardFilter  # utils/normalizer.py:4-14

    reward_rms = RunningMeanStd()  # train_rs.py:68
    discounted_reward = RewardForwardFilter(GAMMA)  # train_rs.py:70
    intrinsic_rewards = np.zeros((STEPS, ENVS), dtype=np.float64)  # train_rs.py:80 (a zero tensor)
    out = []
    for update in range(ROLLOUTS):
        computed_rewards = phi[update].copy()  # train_rs.py:166-168
        intrinsic_rewards = np.concatenate([intrinsic_rewards[-1:], computed_rewards], axis=0)  # :169
        intrinsic_rewards_per_step = np.array([discounted_reward.update(row) for row in intrinsic_rewards])  # :171
        reward_rms.update(intrinsic_rewards_per_step.reshape(-1))  # :172
        intrinsic_rewards /= np.sqrt(reward_rms.var)  # :173
        shaped_rewards = GAMMA * intrinsic_rewards[1:] - intrinsic_rewards[:-1]  # :174
        rewards = reward[update] * EXT_COEF + shaped_rewards  # :175
        out.append(
            {
                "shaping": shaped_rewards.tolist(),
                "reward": rewards.tolist(),
                "var": float(reward_rms.var),
                "carried": intrinsic_rewards[-1].tolist(),
            }
        )
    return out


def cosine_similarity(query: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``models/reward_provider.py:100-102``."""
    return np.matmul(query, key.T) / (
        np.linalg.norm(query, axis=1, keepdims=True) * np.linalg.norm(key, axis=1, keepdims=True).T
    )


def goal_inputs() -> dict[str, list]:
    rng = np.random.default_rng(85)
    goals = rng.normal(size=(8, 4))
    keys = rng.normal(size=(6, 4))
    library = [[0, 1], [2], [3, 4, 5], [6], [7, 0], [1, 6]]  # goal indices per round (goal_library.json)
    query = keys[[0, 2, 5, 1, 3, 4]] + 0.3 * rng.normal(size=(6, 4))
    caption = goals[[1, 2, 6, 3, 0, 7]] + np.array([0.1, 0.1, 0.2, 0.1, 2.0, 0.05])[:, None] * rng.normal(size=(6, 4))
    return {
        "goals_embeddings": np.round(goals, 4).tolist(),
        "key_embeddings": np.round(keys, 4).tolist(),
        "goal_library": library,
        "query": np.round(query, 4).tolist(),
        "caption": np.round(caption, 4).tolist(),
        "threshold": 0.85,  # utils/config.py:73
    }


def original_goal_rewards(inputs: dict[str, list]) -> list[float]:
    goals_idx = inputs["goal_library"]
    key_embeddings, goals_embeddings = np.array(inputs["key_embeddings"]), np.array(inputs["goals_embeddings"])
    query_embeddings, desc_embedding = np.array(inputs["query"]), np.array(inputs["caption"])
    similarities = cosine_similarity(query_embeddings, key_embeddings)  # :79
    topk_idx = np.argsort(similarities, axis=1)[:, -3:]  # :80
    selected_goals = [np.concatenate([goals_idx[i] for i in idx]) for idx in topk_idx]  # :81
    selected_goals_embeddings = [goals_embeddings[idx] for idx in selected_goals]  # :82
    rewards = []
    for i in range(len(desc_embedding)):  # :91-96
        desired_goals = selected_goals_embeddings[i]
        cos_sim = cosine_similarity(desc_embedding[i].reshape(1, -1), desired_goals)[0]
        max_sim = np.max(cos_sim)
        reward = max_sim if max_sim > inputs["threshold"] else 0.0
        rewards.append(float(reward))
    return rewards


PREF_HORIZON = 5  # utils/config.py:61, reward_model_horizon
PREF_ENVS, PREF_STEPS = 2, 12
PREF_ENDS = {(2, 0), (9, 0), (7, 1)}  # (step, env): the step ends the env's episode


def original_pref_windows() -> dict[str, list]:
    """The original's rolling window, slot by slot (lists of symbols in place of its tensors)."""
    sequence_length = PREF_HORIZON + 1  # train_rs.py:73
    rm_obs = [[None] * sequence_length for _ in range(PREF_ENVS)]  # train_rs.py:96 (zeros)
    rm_actions = [[None] * sequence_length for _ in range(PREF_ENVS)]  # train_rs.py:97
    rm_timesteps = [0] * PREF_ENVS  # train_rs.py:98
    episode, step_in_episode = [0] * PREF_ENVS, [0] * PREF_ENVS
    out: dict[str, list] = {"buffer_obs": [], "buffer_actions": [], "model_obs": [], "model_actions": []}
    for step in range(PREF_STEPS):
        next_obs = [[episode[e], step_in_episode[e]] for e in range(PREF_ENVS)]
        action = [list(o) for o in next_obs]  # the action taken from that observation
        for e in range(PREF_ENVS):
            if rm_timesteps[e] == 0:  # train_rs.py:130-131: a new episode fills every slot
                rm_obs[e] = [next_obs[e]] * sequence_length
                rm_actions[e] = [action[e]] * sequence_length
            rm_obs[e] = [*rm_obs[e][1:], next_obs[e]]  # train_rs.py:133
            rm_actions[e] = [*rm_actions[e][1:], action[e]]  # train_rs.py:134
        out["buffer_obs"].append([list(row) for row in rm_obs])
        out["buffer_actions"].append([list(row) for row in rm_actions])
        out["model_obs"].append([row[:-1] for row in rm_obs])  # preference_transformer.py:46
        out["model_actions"].append([row[:-1] for row in rm_actions])  # reward_provider.py:33
        for e in range(PREF_ENVS):
            done = (step, e) in PREF_ENDS
            rm_timesteps[e] = 0 if done else rm_timesteps[e] + 1  # train_rs.py:152-153
            episode[e], step_in_episode[e] = (episode[e] + 1, 0) if done else (episode[e], step_in_episode[e] + 1)
    return out


def write_pref_window() -> None:
    golden = {
        "source": f"mansicer/background-knowledge-rl@{COMMIT}: train_rs.py:73, 96-98, 130-135, 152-153; "
        "models/reward_provider.py:33; models/preference_transformer.py:46",
        "made_by": "benchmarks/methods/bk/golden/make_golden.py --pref-window",
        "horizon": PREF_HORIZON,
        "envs": PREF_ENVS,
        "steps": PREF_STEPS,
        "ends": sorted([step, env] for step, env in PREF_ENDS),
        **original_pref_windows(),
    }
    write("bk_pref_window.json", golden)


def write(name: str, golden: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    lines = (f"{json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items())
    (OUT / name).write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {OUT / name}")


def main(original: str) -> None:
    sys.path.insert(0, original)
    inputs = goal_inputs()
    goal = {
        "source": f"mansicer/background-knowledge-rl@{COMMIT}: models/reward_provider.py:72-102",
        "made_by": "benchmarks/methods/bk/golden/make_golden.py",
        **inputs,
        "rewards": original_goal_rewards(inputs),
    }
    write("bk_goal.json", goal)
    phi, ends, reward = stream()
    golden = {
        "source": f"mansicer/background-knowledge-rl@{COMMIT}: train_rs.py:166-175, utils/normalizer.py",
        "made_by": "benchmarks/methods/bk/golden/make_golden.py",
        "gamma": GAMMA,
        "reward_scale": EXT_COEF,
        "envs": ENVS,
        "steps": STEPS,
        "phi": phi.tolist(),
        "ends": ends.tolist(),
        "env_reward": reward.tolist(),
        "rollouts": original_rollouts(phi, reward),
    }
    write("bk_shaping.json", golden)
    write_pref_window()


if __name__ == "__main__":
    if sys.argv[1:] == ["--pref-window"]:
        sys.exit(write_pref_window())
    if len(sys.argv) != 2:
        sys.exit("usage: make_golden.py PATH_TO_THE_ORIGINAL_CHECKOUT (at commit 5f62882)")
    main(sys.argv[1])
