"""The LLM probe set: how well one model does what the five methods ask of their LLM, with the methods' own
prompts and parsers (imported from their modules), before any training run is spent on it.

Probes (``--n`` sizes each; defaults in ``DEFAULT_N``):

- ``glam``: GLAM's zero-shot policy (its prompt, the summed log-probs of each command, the paper's
  rescaling) against BabyAI's bot on states of the bot's episodes of GLAM's levels: agreement (ties share
  the credit) and the mean π(bot's command); chance is 1/6.
- ``ellm``: ELLM's suggestion prompt on unique captions of ``Crafter-Text-ELLM-v0`` met by the env's
  expert: answers the original's strict parser voids, and of the goals suggested the shares that are ELLM
  achievements, achievable now (``SimpleOracle``) and novel in the episode; the most frequent goal.
- ``bk_code``: BK-Code's first request, sampled ``n`` times (seeds 0..n-1), each answer through BK's
  labelling check (code block, allow-list, the sandbox on BK's samples): pass rate, rejection causes
  (a potential constant on the samples, such as ``return 0.0``, counts as ``constant``); for each code that
  runs, Spearman's rank correlation of Φ with progress (step / episode length) along 50 of the bot's
  episodes of BK's level.
- ``bk_pref``: BK-Pref's labels (its prompt, 5-step windows of a random policy) on pairs whose env progress
  differs: agreement with the env (chance 0.5), decisive and unparsed shares.
- ``llmp``: LLM-Personalize's planner prompt (zero-shot, and one-shot with a demonstration of the same scene)
  on Housekeep states along the expert's episodes: the original parser's parse rate and the share of steps
  the planner would not skip (``skip_cause``), at plan time.
- ``lgqd_describe``: LGQD's describer on random policies' trajectories of the household map: answers with a
  description, descriptions naming a landmark (``named_landmarks``), their deterministic judge score, and
  those with digits or code fences (the prompt forbids numbers).
- ``lgqd_judge``: LGQD's LLM judge on template descriptions of the trajectory (even cases) or of another
  one (odd cases): parse rate and agreement with the deterministic judge.

Every probe records the mean seconds per LLM call. Results go to ``results/<model>.json`` (one entry per
probe, written as soon as the probe ends; a rerun skips the probes finished with the same ``n`` unless
``--force``), and ``results/probe.md`` and ``results/probe.png`` are redrawn from every JSON there.

Run from the repository root (Housekeep needs its data)::

    TEXTENVS_DATA_DIR=/work/shared/data nice -n 10 python benchmarks/llm_probe/probe.py \\
        --model smollm2-135m-instruct --threads 1 [--probes glam,ellm] [--n 100 | --n ellm=50 ...]
    python benchmarks/llm_probe/probe.py --base-url http://host:8000/v1 --model NAME
    python benchmarks/llm_probe/probe.py --render     # only redraw the table and the plot
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
PROBES = ("glam", "ellm", "bk_code", "bk_pref", "llmp", "lgqd_describe", "lgqd_judge")
DEFAULT_N = {"glam": 300, "ellm": 300, "bk_code": 10, "bk_pref": 50, "llmp": 30, "lgqd_describe": 50, "lgqd_judge": 20}
BACKENDS = ("auto", "transformers", "llamacpp")
BK_EPISODES = 50  # bot episodes Φ is correlated on
Z95 = 1.959963984540054


# ---------------------------------------------------------------------- statistics
def wilson(successes: float, trials: int) -> dict[str, Any]:
    """A rate with its Wilson 95% interval (``successes`` may be fractional: ties share credit)."""
    if trials == 0:
        return {"value": None, "k": successes, "n": 0, "ci95": None}
    p = successes / trials
    denominator = 1 + Z95**2 / trials
    centre = (p + Z95**2 / (2 * trials)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / trials + Z95**2 / (4 * trials**2)) / denominator
    return {"value": p, "k": successes, "n": trials, "ci95": [max(0.0, centre - half), min(1.0, centre + half)]}


def bootstrap_mean(values: Sequence[float], seed: int = 0, resamples: int = 2000) -> dict[str, Any]:
    """A mean with its percentile-bootstrap 95% interval."""
    if not len(values):
        return {"value": None, "n": 0, "ci95": None}
    array = np.asarray(values, dtype=np.float64)
    means = np.random.default_rng(seed).choice(array, (resamples, len(array))).mean(axis=1)
    return {
        "value": float(array.mean()),
        "n": len(array),
        "ci95": [float(np.quantile(means, q)) for q in (0.025, 0.975)],
    }


def spearman_by_groups(phi: Sequence[Sequence[float]], progress: Sequence[Sequence[float]], seed: int = 0) -> dict:
    """Spearman's correlation over every (Φ, progress) pair of the groups (episodes), with a bootstrap 95%
    interval over groups; None where Φ or progress is constant."""
    from scipy import stats

    def rho(indices: Sequence[int]) -> float | None:
        x = np.concatenate([phi[i] for i in indices])
        y = np.concatenate([progress[i] for i in indices])
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            return None
        return float(stats.spearmanr(x, y).statistic)

    value = rho(range(len(phi)))
    if value is None:
        return {"value": None, "n": len(phi), "ci95": None}
    rng = np.random.default_rng(seed)
    draws = [rho(rng.integers(len(phi), size=len(phi))) for _ in range(500)]
    draws = [d for d in draws if d is not None]
    return {"value": value, "n": len(phi), "ci95": [float(np.quantile(draws, q)) for q in (0.025, 0.975)]}


# ---------------------------------------------------------------------- backends
class TimedBackend:
    """An ``LLMBackend`` that counts the prompts it answers (a batch of k counts k) and the seconds they take."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.model_name = inner.model_name
        self.usage = inner.usage
        self.calls = 0
        self.seconds = 0.0

    def _timed(self, count: int, run: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = run()
        self.seconds += time.perf_counter() - start
        self.calls += count
        return result

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        return self._timed(len(prompts), lambda: self.inner.generate(prompts, **sampling))

    def chat(self, messages: Sequence[Any], **sampling: Any) -> str:
        return self._timed(1, lambda: self.inner.chat(messages, **sampling))

    def chat_batch(self, conversations: Sequence[Sequence[Any]], **sampling: Any) -> list[str]:
        from textagents.llm.base import chat_batch

        return self._timed(len(conversations), lambda: chat_batch(self.inner, conversations, **sampling))

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        return self._timed(len(contexts), lambda: self.inner.score(contexts, candidates))

    def timing(self) -> dict[str, Any]:
        return {"calls": self.calls, "seconds": self.seconds, "seconds_per_call": self.seconds / max(1, self.calls)}


@dataclass
class Backends:
    """The model's backends, built on first use: ``generator`` (generate/chat) on ``backend`` and ``scorer``
    (score) on ``score_backend``; both are one OpenAI-compatible client with ``base_url``."""

    model: str
    backend: str = "auto"
    score_backend: str = "transformers"
    base_url: str | None = None
    threads: int | None = None
    built: dict[str, Any] = field(default_factory=dict)

    def _kind(self, choice: str) -> str:
        if self.base_url is not None:
            return "openai"
        if choice != "auto":
            return choice
        from textagents.llm.models import known_name

        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            return "transformers"
        return "llamacpp" if known_name(self.model) is not None else "transformers"

    def _build(self, kind: str) -> Any:
        if kind not in self.built:
            if kind == "openai":
                from textagents.llm import OpenAIBackend

                inner = OpenAIBackend(self.model, base_url=self.base_url)
            elif kind == "llamacpp":
                from textagents.llm.llamacpp_backend import LlamaCppBackend

                inner = LlamaCppBackend(self.model, n_threads=self.threads, n_ctx=4096)
            else:
                import torch

                from textagents.llm.transformers_backend import TransformersBackend

                if self.threads is not None:
                    torch.set_num_threads(self.threads)
                # GLAM's paper scoring tokenizes candidates with special tokens (glam/llm_learner.py); only
                # scoring reads this setting
                inner = TransformersBackend(self.model, candidate_special_tokens=True)
            self.built[kind] = inner
        return self.built[kind]

    def generator(self) -> TimedBackend:
        return TimedBackend(self._build(self._kind(self.backend)))

    def scorer(self) -> TimedBackend:
        return TimedBackend(self._build(self._kind(self.score_backend)))

    def kinds(self) -> dict[str, str]:
        return {"generate": self._kind(self.backend), "score": self._kind(self.score_backend)}


# ---------------------------------------------------------------------- probes
@dataclass(frozen=True)
class Probe:
    n: int
    seed: int = 0


def glam_policy(scores: Sequence[float]) -> np.ndarray:
    """GLAM's π over one context's commands from their summed log-probs (the paper's rescaling)."""
    import torch

    from textagents.methods.glam.scoring import paper_logits

    logits = paper_logits(torch.tensor(scores, dtype=torch.float64), torch.zeros(len(scores), dtype=torch.long))
    return torch.softmax(logits, 0).numpy()


def glam_states(n: int, seed: int) -> list[tuple[str, list[str], int]]:
    """``n`` (context, candidates, bot's command index) of the bot's episodes, alternating GLAM's training
    and test levels, seeds from ``seed`` on."""
    from textagents.methods.glam.config import GlamConfig
    from textagents.methods.glam.episodes import Episodes

    defaults = GlamConfig()
    levels = (defaults.env_id, *defaults.test_env_ids)
    states: list[tuple[str, list[str], int]] = []
    episode = 0
    while len(states) < n:
        episodes = Episodes(levels[episode % len(levels)], 1, None, seed + episode, defaults.prompt_observations)
        expert = episodes.envs[0].unwrapped.expert()
        expert.reset(None, episodes.infos[0])
        ended = False
        while not ended and len(states) < n:
            command = expert.act(None, episodes.infos[0])
            index = episodes.infos[0]["admissible_commands"].index(command)
            states.append((episodes.context(0), episodes.candidates(0), index))
            _, ended, _ = episodes.step(0, index)
        episodes.close()
        episode += 1
    return states


def probe_glam(backends: Backends, probe: Probe) -> dict[str, Any]:
    scorer = backends.scorer()
    states = glam_states(probe.n, probe.seed)
    agreement, probability, chance = 0.0, [], 0.0
    for context, candidates, bot in states:
        policy = glam_policy(scorer.score([context], [candidates])[0])
        best = np.flatnonzero(policy == policy.max())
        agreement += (bot in best) / len(best)
        probability.append(float(policy[bot]))
        chance += 1 / len(candidates)
    return {
        "agreement": wilson(agreement, len(states)),
        "mean_pi_bot": bootstrap_mean(probability, probe.seed),
        "chance": chance / len(states),
        "timing": scorer.timing(),
    }


def crafter_captions(n: int, seed: int, keep: float = 0.2) -> list[tuple[Any, frozenset[str]]]:
    """``n`` captions with distinct ELLM prompts met by ``Crafter-Text-ELLM-v0``'s expert (each step kept with
    probability ``keep``), each with the goals achieved before it in its episode (the player's successful
    actions that are ELLM goals, as the reward wrapper counts them)."""
    import gymnasium as gym

    import textenvs  # noqa: F401
    from textagents.methods.ellm.goals import PREREQUISITES, Caption
    from textagents.methods.ellm.prompt import goal_prompt

    env = gym.make("Crafter-Text-ELLM-v0")
    rng = np.random.default_rng(seed)
    expert = env.unwrapped.expert()
    captions: dict[str, tuple[Any, frozenset[str]]] = {}
    episode = 0
    while len(captions) < n:
        obs, info = env.reset(seed=seed + episode)
        expert.reset(obs, info)
        achieved: set[str] = set()
        done = False
        while not done and len(captions) < n:
            caption = Caption.of(info)
            if rng.random() < keep:
                prompt = goal_prompt(caption.observation, caption.inventory, caption.status)
                captions.setdefault(prompt, (caption, frozenset(achieved)))
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            if info.get("action_success") and info["player_action"] in PREREQUISITES:
                achieved.add(info["player_action"])
            done = terminated or truncated
        episode += 1
    env.close()
    return list(captions.values())


def probe_ellm(backends: Backends, probe: Probe) -> dict[str, Any]:
    from textagents.methods.ellm.goals import PREREQUISITES, SimpleOracle
    from textagents.methods.ellm.prompt import SAMPLING, goal_prompt, parse_goals

    generator = backends.generator()
    captions = crafter_captions(probe.n, probe.seed)
    voided, empty, goals, valid, achievable, novel, any_achievable, oracle_any = 0, 0, Counter(), 0, 0, 0, 0, 0
    for caption, achieved in captions:
        prompt = goal_prompt(caption.observation, caption.inventory, caption.status)
        parsed = parse_goals(generator.generate([prompt], **SAMPLING)[0], strict=True)
        voided += not parsed.valid
        empty += parsed.valid and not parsed.goals
        possible = set(SimpleOracle().suggest(caption))
        oracle_any += bool(possible)
        any_achievable += any(g in possible for g in parsed.goals)
        goals.update(parsed.goals)
        valid += sum(g in PREREQUISITES for g in parsed.goals)
        achievable += sum(g in possible for g in parsed.goals)
        novel += sum(g not in achieved for g in parsed.goals)
    suggested = sum(goals.values())
    top = goals.most_common(1)
    return {
        "captions": len(captions),
        "strict_parse_failure": wilson(voided, len(captions)),
        "empty_answer": wilson(empty, len(captions)),
        "goals_suggested": suggested,
        "goals_per_caption": suggested / len(captions),
        "valid": wilson(valid, suggested),
        "achievable": wilson(achievable, suggested),
        "novel": wilson(novel, suggested),
        "captions_with_achievable_goal": wilson(any_achievable, len(captions)),
        "oracle_captions_with_goal": wilson(oracle_any, len(captions)),
        "top_goal": {"goal": top[0][0], "share_of_captions": top[0][1] / len(captions)} if top else None,
        "timing": generator.timing(),
    }


def bot_trajectories(env_id: str, episodes: int, seed: int) -> list[tuple[list[str], list[float]]]:
    """Per bot episode of ``env_id``: its observations' text and the progress at each (step / length)."""
    import gymnasium as gym

    import textenvs  # noqa: F401

    env = gym.make(env_id)
    expert = env.unwrapped.expert()
    trajectories = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        expert.reset(obs, info)
        texts, done = [str(obs["text"])], False
        while not done:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            texts.append(str(obs["text"]))
            done = terminated or truncated
        trajectories.append((texts, [t / (len(texts) - 1) for t in range(len(texts))]))
    env.close()
    return trajectories


def code_outcome(round_: dict[str, Any]) -> str:
    """The labelling check's verdict on one answer: ``pass`` or why it was rejected."""
    if not round_["code"]:
        return "no_code_block"
    if round_["error"] is not None:
        return "refused" if round_["error"].startswith("refused before running") else "error"
    return "constant" if len(set(round_["values"])) <= 1 else "pass"


def probe_bk_code(backends: Backends, probe: Probe) -> dict[str, Any]:
    from textagents.methods.bk.code_potential import write_potential
    from textagents.methods.bk.config import SAMPLING, BKConfig
    from textagents.methods.bk.environments import family_name
    from textagents.methods.bk.isolation import choose_isolation
    from textagents.methods.bk.samples import random_steps
    from textagents.methods.bk.sandbox import SandboxedPotential

    config = BKConfig()
    isolation = choose_isolation(False)
    generator = backends.generator()
    samples = [step.observation for step in random_steps(config.env_id, config.code_samples, config.seed)]
    family = family_name(config.env_id)
    outcomes, running = [], []
    for index in range(probe.n):
        labelling = write_potential(
            generator, family, samples, rounds=1, sampling={**SAMPLING, "seed": probe.seed + index}, isolation=isolation
        )
        outcome = code_outcome(labelling.rounds[0])
        outcomes.append(outcome)
        if outcome in ("pass", "constant"):
            running.append(labelling.code)
    trajectories = bot_trajectories(config.env_id, BK_EPISODES, probe.seed) if running else []
    correlations = []
    for code in running:
        with SandboxedPotential(code, isolation=isolation) as potential:
            phi = [np.asarray([potential.phi(text) for text in texts]) for texts, _ in trajectories]
        correlations.append(spearman_by_groups(phi, [np.asarray(p) for _, p in trajectories], probe.seed))
    values = [c["value"] for c in correlations if c["value"] is not None]
    counts = Counter(outcomes)
    return {
        "codes": probe.n,
        "pass": wilson(counts["pass"], probe.n),
        "outcomes": {k: counts[k] for k in ("pass", "constant", "error", "refused", "no_code_block")},
        "spearman_per_code": correlations,
        "spearman_mean": float(np.mean(values)) if values else None,
        "spearman_best": max(values) if values else None,
        "isolation": isolation,
        "timing": generator.timing(),
    }


def decisive_pairs(env_id: str, n: int, seed: int, window: int) -> list[tuple[Any, Any, float]]:
    """``n`` pairs of random-policy windows (BK-Pref's sampling) whose last steps' env progress differs,
    with the env's label."""
    from textagents.methods.bk.pref_potential import env_preference
    from textagents.methods.bk.samples import random_windows

    pairs: list[tuple[Any, Any, float]] = []
    batch = 0
    while len(pairs) < n:
        windows = random_windows(env_id, 4 * n, seed + batch, window)
        for a, b in zip(windows[::2], windows[1::2], strict=True):
            truth = env_preference(a[-1], b[-1])
            if truth is not None and len(pairs) < n:
                pairs.append((a, b, truth))
        batch += 1
    return pairs


def probe_bk_pref(backends: Backends, probe: Probe) -> dict[str, Any]:
    from textagents.methods.bk.config import BKConfig
    from textagents.methods.bk.environments import family_name
    from textagents.methods.bk.pref_potential import agreement
    from textagents.methods.bk.pref_prompt import A_BETTER, B_BETTER, EQUAL, label_pairs, window_text

    config = BKConfig()
    generator = backends.generator()
    pairs = decisive_pairs(config.env_id, probe.n, probe.seed, config.pref_window)
    snippets = [(window_text(a, config.pref_action), window_text(b, config.pref_action)) for a, b, _ in pairs]
    labels = [
        row.label for row in label_pairs(generator, family_name(config.env_id), snippets, steps=config.pref_window)
    ]
    share, judged = agreement(labels, [truth for _, _, truth in pairs])
    return {
        "pairs": len(pairs),
        "agreement": wilson(0.0 if judged == 0 else share * judged, judged),
        "decisive": wilson(sum(label in (A_BETTER, B_BETTER) for label in labels), len(pairs)),
        "equal": wilson(sum(label == EQUAL for label in labels), len(pairs)),
        "unparsed": wilson(sum(label is None for label in labels), len(pairs)),
        "chance": 0.5,
        "timing": generator.timing(),
    }


def housekeep_states(n: int, seed: int) -> list[tuple[str, Any, list[dict[str, str]]]]:
    """``n`` states of the faithful expert's Housekeep episodes (LLM-Personalize's scenes, test indices, a
    random number of expert commands in), each as (observation text, the env's world then, a demonstration
    pair of the same scene)."""
    import copy

    from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
    from textagents.methods.llm_personalize.demonstrations import FIRST_DEMONSTRATION_INDEX, demonstrate
    from textenvs.envs.housekeep.env import HousekeepTextEnv
    from textenvs.envs.housekeep.expert import HousekeepExpert
    from textenvs.envs.housekeep.sampling import paper_split_indices

    scenes = LLMPersonalizeConfig().scenes
    env = HousekeepTextEnv(scenes=list(scenes), episode_source="llm_personalize")
    demonstrations: dict[str, list[dict[str, str]]] = {}
    for scene in scenes:
        for index in range(FIRST_DEMONSTRATION_INDEX, FIRST_DEMONSTRATION_INDEX + 10):
            pairs = demonstrate(env, scene, index)
            if pairs:
                demonstrations[scene] = pairs[0]
                break
    rng = np.random.default_rng(seed)
    indices = paper_split_indices("test")
    states = []
    for state in range(n):
        scene = scenes[state % len(scenes)]
        obs, info = env.reset(seed=seed, options={"scene": scene, "episode_index": indices[state // len(scenes)]})
        expert = HousekeepExpert(env, mode="faithful", seed=seed)
        expert.reset(obs, info)
        for _ in range(int(rng.integers(0, 20))):
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            if terminated or truncated:
                break
        states.append((str(obs["text"]), copy.deepcopy(env.world), demonstrations[scene]))
    env.close()
    return states


def plan_figures(answers: Sequence[str], worlds: Sequence[Any]) -> dict[str, Any]:
    """Steps the original parser reads, steps the planner would take (not skipped) at plan time, and plans
    with no step, over ``answers`` given in ``worlds``."""
    from textagents.methods.llm_personalize.plan_parser import parse_plan
    from textagents.methods.llm_personalize.planner import skip_cause

    steps, parsed, admissible, empty = 0, 0, 0, 0
    for answer, world in zip(answers, worlds, strict=True):
        plan = parse_plan(answer)
        empty += not plan.steps
        steps += len(plan.steps)
        parsed += sum(step.verb is not None for step in plan.steps)
        admissible += sum(skip_cause(world, step) is None for step in plan.steps)
    return {
        "steps": steps,
        "steps_per_plan": steps / len(answers),
        "parse_rate": wilson(parsed, steps),
        "admissible_rate": wilson(admissible, steps),
        "empty_plans": wilson(empty, len(answers)),
    }


def probe_llmp(backends: Backends, probe: Probe) -> dict[str, Any]:
    from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
    from textagents.methods.llm_personalize.planner import PAPER_SAMPLING, planner_messages

    generator = backends.generator()
    states = housekeep_states(probe.n, probe.seed)
    sampling = {**PAPER_SAMPLING, **LLMPersonalizeConfig().sampling(), "seed": probe.seed}
    zero = [planner_messages(text) for text, _, _ in states]
    one = [[*demo, *planner_messages(text)[1:]] for text, _, demo in states]
    worlds = [world for _, world, _ in states]
    results = {}
    for name, conversations in (("zero_shot", zero), ("one_shot", one)):
        results[name] = plan_figures(generator.chat_batch(conversations, **sampling), worlds)
    return {"states": len(states), **results, "timing": generator.timing()}


def household_annotations(n: int, seed: int) -> list[Any]:
    """Trajectory annotations of ``n`` random LGQD policies (its network, torch's initialisation) on its map."""
    import random

    from textagents.methods.lgqd.annotate import rollouts
    from textagents.methods.lgqd.config import LGQDConfig
    from textagents.methods.lgqd.policies import initial_genomes, layer_sizes

    config = LGQDConfig()
    sizes = layer_sizes(config.hidden_size, config.hidden_layers)
    genomes = np.asarray(initial_genomes(sizes, n, random.Random(seed)), dtype=np.float32)
    _, annotations = rollouts(genomes, config)
    return annotations


_NUMBERS_OR_CODE = re.compile(r"\d|```|\{|\}")


def probe_lgqd_describe(backends: Backends, probe: Probe) -> dict[str, Any]:
    from textagents.methods.lgqd.config import LGQDConfig
    from textagents.methods.lgqd.judge import landmark_order_score, named_landmarks
    from textagents.methods.lgqd.prompts import describe_messages, draw_style, read_description
    from textenvs.envs.fastsim.layouts import get_layout

    config = LGQDConfig()
    layout = get_layout("household")
    generator = backends.generator()
    annotations = household_annotations(probe.n, probe.seed)
    styles = [draw_style(config.style_weights, config.seed, item) for item in range(probe.n)]
    answers = generator.chat_batch(
        [describe_messages(s, a) for s, a in zip(styles, annotations, strict=True)],
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )
    # the descriptor tag is replaced by the final position in numbers: look for numbers before that
    raw = [read_description(answer, style, (0.0, 0.0)) for answer, style in zip(answers, styles, strict=True)]
    described = [(d, a) for d, a in zip(raw, annotations, strict=True) if d is not None]
    named = [d for d, _ in described if named_landmarks(d, layout)]
    scores = [landmark_order_score(d, a, layout) for d, a in described]
    return {
        "items": probe.n,
        "described": wilson(len(described), probe.n),
        "names_landmark": wilson(len(named), len(described)),
        "numbers_or_code": wilson(
            sum(bool(_NUMBERS_OR_CODE.search(d.replace("x=0, y=0", ""))) for d, _ in described), len(described)
        ),
        "landmark_order_score": bootstrap_mean([s for s in scores if s is not None], probe.seed),
        "examples": [d for d, _ in described[:3]],
        "timing": generator.timing(),
    }


def probe_lgqd_judge(backends: Backends, probe: Probe) -> dict[str, Any]:
    from textagents.methods.lgqd.config import LGQDConfig
    from textagents.methods.lgqd.judge import judge_agreement, landmark_order_score, llm_judge
    from textagents.methods.lgqd.template import template_description

    config = LGQDConfig()
    generator = backends.generator()
    annotations = household_annotations(probe.n + 1, probe.seed)
    cases = [
        (template_description(annotations[i + (i % 2)]), annotations[i]) for i in range(probe.n)
    ]  # odd cases: the next trajectory's description
    judgements = llm_judge(generator, cases, max_tokens=config.judge_max_tokens)
    llm = [j.score for j in judgements]
    deterministic = [landmark_order_score(d, a) for d, a in cases]
    scores = [s for s in llm if s is not None]
    return {
        "cases": probe.n,
        "parsed": wilson(len(scores), probe.n),
        "distinct_scores": len(set(scores)),
        "agreement": judge_agreement(llm, deterministic),
        "timing": generator.timing(),
    }


RUNNERS: dict[str, Callable[[Backends, Probe], dict[str, Any]]] = {
    "glam": probe_glam,
    "ellm": probe_ellm,
    "bk_code": probe_bk_code,
    "bk_pref": probe_bk_pref,
    "llmp": probe_llmp,
    "lgqd_describe": probe_lgqd_describe,
    "lgqd_judge": probe_lgqd_judge,
}


# ---------------------------------------------------------------------- results
def model_label(model: str) -> str:
    """The results file's name for a model: a folder's or file's last part, characters safe in a file name."""
    name = Path(model.rstrip("/")).name or model
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def read_results(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def write_json(path: Path, payload: dict[str, Any]) -> None:
    from textagents.bench.store import write_json_atomic

    write_json_atomic(path, payload)


def run_probes(
    backends: Backends, label: str, names: Sequence[str], sizes: dict[str, int], out: Path, force: bool, seed: int = 0
) -> dict[str, Any]:
    """Run the ``names`` probes not finished yet (same ``n``) into ``out/<label>.json``, each saved as it ends."""
    path = out / f"{label}.json"
    results = read_results(path) or {"model": backends.model, "base_url": backends.base_url, "probes": {}}
    for name in names:
        done = results["probes"].get(name)
        if done is not None and done["n"] == sizes[name] and not force:
            print(f"{name}: done (n={sizes[name]}), skipped", file=sys.stderr)
            continue
        print(f"{name}: n={sizes[name]} ...", file=sys.stderr)
        start = time.perf_counter()
        figures = RUNNERS[name](backends, Probe(sizes[name], seed))
        results["probes"][name] = {
            "n": sizes[name],
            "backends": backends.kinds(),
            "threads": backends.threads,
            "wall_s": time.perf_counter() - start,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            **figures,
        }
        write_json(path, results)
        print(f"{name}: {results['probes'][name]['wall_s']:.0f} s", file=sys.stderr)
    return results


#: The table's rows: (probe, label, path to the figure in the probe's result).
HEADLINES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("glam", "GLAM: agreement with the bot (chance ~0.17)", ("agreement",)),
    ("glam", "GLAM: mean π(bot's command)", ("mean_pi_bot",)),
    ("ellm", "ELLM: answers voided by the strict parser", ("strict_parse_failure",)),
    ("ellm", "ELLM: suggested goals valid", ("valid",)),
    ("ellm", "ELLM: suggested goals achievable now", ("achievable",)),
    ("ellm", "ELLM: suggested goals novel", ("novel",)),
    ("ellm", "ELLM: most frequent goal's share of captions", ("top_goal", "share_of_captions")),
    ("bk_code", "BK-Code: codes passing the check, non-constant", ("pass",)),
    ("bk_code", "BK-Code: best Spearman(Φ, progress)", ("spearman_best",)),
    ("bk_pref", "BK-Pref: agreement with env progress (chance 0.5)", ("agreement",)),
    ("bk_pref", "BK-Pref: decisive labels", ("decisive",)),
    ("llmp", "LLM-Personalize zero-shot: steps parsed", ("zero_shot", "parse_rate")),
    ("llmp", "LLM-Personalize zero-shot: steps admissible", ("zero_shot", "admissible_rate")),
    ("llmp", "LLM-Personalize one-shot: steps admissible", ("one_shot", "admissible_rate")),
    ("lgqd_describe", "LGQD: descriptions naming a landmark", ("names_landmark",)),
    ("lgqd_describe", "LGQD: descriptions with numbers or code", ("numbers_or_code",)),
    ("lgqd_describe", "LGQD: deterministic judge score of descriptions", ("landmark_order_score",)),
    ("lgqd_judge", "LGQD judge: answers parsed", ("parsed",)),
    ("lgqd_judge", "LGQD judge: Spearman with the deterministic judge", ("agreement", "spearman")),
)


def figure(result: dict[str, Any], path: Sequence[str]) -> tuple[float | None, list[float] | None]:
    """A headline's value and 95% interval (None where absent)."""
    value: Any = result
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, dict):
        return value.get("value"), value.get("ci95")
    return value, None


def cell(result: dict[str, Any] | None, path: Sequence[str]) -> str:
    if result is None:
        return "—"
    value, ci = figure(result, path)
    if value is None:
        return "n/a"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def render(out: Path) -> Path:
    """``probe.md`` (one column per model) and ``probe.png`` from every ``out/*.json``."""
    from textagents.bench.store import write_text_atomic

    models = {path.stem: json.loads(path.read_text()) for path in sorted(out.glob("*.json"))}
    names = list(models)
    lines = [
        "# LLM probe results",
        "",
        "Generated by `benchmarks/llm_probe/probe.py` from the JSON files here; values with a 95% interval "
        "(Wilson for rates, bootstrap for means and correlations).",
        "",
        "| probe | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for probe, label, path in HEADLINES:
        lines.append(f"| {label} | " + " | ".join(cell(models[m]["probes"].get(probe), path) for m in names) + " |")
    lines += [
        "",
        "| probe: n, seconds per call, backend (threads) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for probe in PROBES:
        row = []
        for m in names:
            result = models[m]["probes"].get(probe)
            row.append(
                "—"
                if result is None
                else f"n={result['n']}, {result['timing']['seconds_per_call']:.2f} s, "
                f"{result['backends']['score' if probe == 'glam' else 'generate']} ({result['threads']})"
            )
        smaller = [
            f"{m}" for m in names if probe in models[m]["probes"] and models[m]["probes"][probe]["n"] < DEFAULT_N[probe]
        ]
        note = f" (default n={DEFAULT_N[probe]}" + ("; smaller here for " + ", ".join(smaller) if smaller else "") + ")"
        lines.append(f"| {probe}{note} | " + " | ".join(row) + " |")
    write_text_atomic(out / "probe.md", "\n".join(lines) + "\n")
    plot(models, out / "probe.png")
    return out / "probe.md"


def plot(models: dict[str, dict[str, Any]], path: Path) -> None:
    """One horizontal bar per (headline, model), with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [h for h in HEADLINES if not h[1].startswith(("BK-Code: best", "LGQD judge: Spearman"))]
    height = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) * max(1, len(models)) ** 0.5 + 1.5))
    for k, (model, data) in enumerate(models.items()):
        ys, xs, errors = [], [], [[], []]
        for i, (probe, _, key) in enumerate(rows):
            result = data["probes"].get(probe)
            value, ci = figure(result, key) if result else (None, None)
            if value is None:
                continue
            ys.append(i + k * height)
            xs.append(value)
            errors[0].append(value - ci[0] if ci else 0.0)
            errors[1].append(ci[1] - value if ci else 0.0)
        ax.barh(ys, xs, height=height, xerr=errors, label=model, capsize=2)
    ax.set_yticks([i + height * (len(models) - 1) / 2 for i in range(len(rows))], [r[1] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("rate / score (95% interval)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


# ---------------------------------------------------------------------- command line
def parse_sizes(values: Sequence[str], parser: argparse.ArgumentParser) -> dict[str, int]:
    """``--n 50`` (every probe) and ``--n ellm=100`` (one probe) over ``DEFAULT_N``."""
    sizes = dict(DEFAULT_N)
    for value in values:
        name, _, number = value.rpartition("=")
        if name and name not in PROBES:
            parser.error(f"--n {value}: unknown probe {name!r}; valid: {', '.join(PROBES)}")
        if not number.isdigit() or int(number) < 1:
            parser.error(f"--n {value}: the size must be a positive integer")
        for probe in [name] if name else PROBES:
            sizes[probe] = int(number)
    return sizes


def parse_probes(value: str, parser: argparse.ArgumentParser) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in PROBES]
    if unknown or not names:
        parser.error(f"--probes: unknown probe {', '.join(unknown) or repr(value)}; valid: {', '.join(PROBES)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a downloaded model's name, a local folder or .gguf, or a name at --base-url")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (then --model is its model's name)")
    parser.add_argument(
        "--backend", choices=BACKENDS, default="auto", help="generation backend (auto: llama.cpp for a downloaded GGUF)"
    )
    parser.add_argument(
        "--score-backend", choices=BACKENDS, default="transformers", help="GLAM's scoring backend (GLAM: transformers)"
    )
    parser.add_argument("--probes", default=",".join(PROBES), help=f"comma-separated, of: {', '.join(PROBES)}")
    parser.add_argument("--n", action="append", default=[], metavar="[PROBE=]N", help="probe sizes (repeatable)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of a local model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--force", action="store_true", help="rerun probes already finished")
    parser.add_argument("--render", action="store_true", help="only redraw probe.md and probe.png")
    args = parser.parse_args(argv)
    if args.render:
        print(render(args.out))
        return 0
    if args.model is None:
        parser.error("--model is required (a downloaded model's name, a folder, or a name at --base-url)")
    names = parse_probes(args.probes, parser)
    sizes = parse_sizes(args.n, parser)
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    if args.base_url is None:
        from textagents.llm.models import resolve_model

        try:
            resolve_model(args.model)
        except (FileNotFoundError, ValueError) as error:
            parser.error(f"--model {args.model!r}: {error}")
    backends = Backends(args.model, args.backend, args.score_backend, args.base_url, args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    run_probes(backends, model_label(args.model), names, sizes, args.out, args.force, args.seed)
    print(render(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
