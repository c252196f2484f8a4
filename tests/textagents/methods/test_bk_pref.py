"""BK-Pref: the rank parser, the Bradley-Terry loss against a hand computation (with the original's label
smoothing), training steps that lower it, the scorer as a potential, the labels' agreement with the env's
progress signal on scripted labels, the original preference and goal prompts from verified copies, and
the windows of ``pref_window`` steps (labelling, the scorer's input, Φ's rolling window against the original's,
golden: ``benchmarks/methods/bk/golden/make_golden.py``) with ``pref_window: 1`` as the single snippet."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from gymnasium import spaces

from tests.scripts import load_script
from tests.textagents.methods.scripted_llm import Scripted
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import ENVIRONMENTS
from textagents.methods.bk.goal_prompt import describe_steps, propose_goals
from textagents.methods.bk.pref_model import (
    SnippetScorer,
    bradley_terry_loss,
    build_vocabulary,
    encode,
    encode_windows,
    train_scorer,
)
from textagents.methods.bk.pref_potential import PrefKnowledge, PrefPotential, agreement, env_preference
from textagents.methods.bk.pref_prompt import (
    A_BETTER,
    B_BETTER,
    EQUAL,
    SNIPPET_ONE_STEP,
    SNIPPET_STEPS,
    SYSTEM,
    label_pairs,
    parse_preference,
    snippet_text,
    step_snippet,
    window_text,
)
from textagents.methods.bk.samples import Step, random_steps, random_windows
from textagents.methods.bk.shaping import PreActionPotential
from textagents.methods.core.original_prompts import PROMPT_ASSETS
from textenvs.data.assets import Asset
from textenvs.envs.babyai_text.env import COMMANDS


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("[Thoughts]\nA walks into a wall.\n\n[Rank]\nB > A", B_BETTER),
        ("[Rank]\nA > B", A_BETTER),
        ("[Rank] A = B", EQUAL),
        ("Rank: B < A", A_BETTER),
        ("[Thoughts] At first A > B seemed right.\n[Rank]\nB > A", B_BETTER),  # the last [Rank] decides
        ("```\n[Thoughts]\n...\n[Rank]\nA>B\n```", A_BETTER),
        ("Both look fine to me.", None),
        ("[Rank]\nA > B OR B > A OR A = B", None),  # the format echoed: contradictory
        ("[Rank] A > A", None),
        ("Frankly, A > B.", A_BETTER),  # no [Rank] section: the whole answer
    ],
)
def test_the_rank_is_read_defensively(answer, label):
    assert parse_preference(answer) == label


def test_the_loss_is_the_originals_bradley_terry_with_label_smoothing():
    score_a = torch.tensor([1.0, 0.0, 2.0])
    score_b = torch.tensor([0.0, 1.0, 2.0])
    labels = torch.tensor([A_BETTER, B_BETTER, EQUAL])

    def nll(x: float) -> float:  # -log sigmoid(x)
        return math.log1p(math.exp(-x))

    cross_entropy = (nll(1.0) + nll(1.0)) / 2  # the tie is left out
    uniform = (nll(1.0) + nll(-1.0) + nll(-1.0) + nll(1.0) + 2 * math.log(2)) / 6  # both snippets of every pair
    expected = cross_entropy + 0.3 * uniform
    assert float(bradley_terry_loss(score_a, score_b, labels, 0.3)) == pytest.approx(expected, rel=1e-6)
    assert float(bradley_terry_loss(score_a, score_b, labels, 0.0)) == pytest.approx(cross_entropy, rel=1e-6)
    ties = torch.tensor([EQUAL] * 3)
    assert float(bradley_terry_loss(score_a, score_b, ties, 0.3)) == pytest.approx(
        0.3 * (-torch.log_softmax(torch.stack([score_a, score_b], -1), -1)).mean().item(), rel=1e-6
    )


SNIPPETS_BETTER = [
    snippet_text("go to the red ball", "go forward", f"You see a red ball {n} steps forward") for n in (1, 2, 3)
]
SNIPPETS_WORSE = [snippet_text("go to the red ball", "turn left", f"You see a wall {n} steps left") for n in (1, 2, 3)]


def _scorer_and_data():
    texts_a = SNIPPETS_BETTER + SNIPPETS_WORSE
    texts_b = SNIPPETS_WORSE + SNIPPETS_BETTER
    labels = torch.tensor([A_BETTER] * 3 + [B_BETTER] * 3)
    vocabulary = build_vocabulary(texts_a)
    torch.manual_seed(0)
    scorer = SnippetScorer(len(vocabulary), width=16, layers=1, max_tokens=24)
    return scorer, encode(texts_a, vocabulary, 24), encode(texts_b, vocabulary, 24), labels, vocabulary


def test_one_training_step_lowers_the_loss_and_training_learns_the_labels():
    scorer, tokens_a, tokens_b, labels, vocabulary = _scorer_and_data()

    def loss() -> float:
        with torch.no_grad():
            return float(bradley_terry_loss(scorer(tokens_a), scorer(tokens_b), labels, 0.3))

    before = loss()
    train_scorer(scorer, tokens_a, tokens_b, labels, epochs=1, learning_rate=1e-2, smoothing=0.3, seed=0, batch_size=6)
    assert loss() < before
    losses = train_scorer(scorer, tokens_a, tokens_b, labels, epochs=30, learning_rate=1e-2, smoothing=0.3, seed=0)
    assert losses[-1] < losses[0]
    with torch.no_grad():
        better = scorer(encode(SNIPPETS_BETTER, vocabulary, 24))
        worse = scorer(encode(SNIPPETS_WORSE, vocabulary, 24))
    assert bool((better.min() > worse.max()).item())


def test_the_potential_scores_the_snippet_of_the_action_that_led_here_and_caches_it():
    scorer, _, _, _, vocabulary = _scorer_and_data()
    potential = PrefPotential(scorer, vocabulary, 24, COMMANDS)
    obs = {"mission": "go to the red ball", "text": "You see a red ball 1 steps forward"}
    expected = scorer(encode([SNIPPETS_BETTER[0]], vocabulary, 24))[0].item()
    assert potential(obs, {"action": 2}) == pytest.approx(expected)  # 2: go forward
    assert potential(obs, {"action": "go forward"}) == pytest.approx(expected)
    assert potential(obs, {}) != pytest.approx(expected)  # after a reset: no action
    assert potential.calls == 3 and len(potential.cache) == 2


def test_without_the_action_the_potential_is_one_of_the_state_whatever_action_led_there(tmp_path):
    assert "Action" not in snippet_text("go to the red ball", "pick up", "You see a wall", with_action=False)
    scorer, _, _, _, vocabulary = _scorer_and_data()
    potential = PrefPotential(scorer, vocabulary, 24, COMMANDS, with_action=False)
    obs = {"mission": "go to the red ball", "text": "You see a red ball 1 steps forward"}
    values = {potential(obs, {"action": action}) for action in range(len(COMMANDS))} | {potential(obs, {})}
    assert len(values) == 1 and len(potential.cache) == 1

    config = BKConfig(shaping="pref", pref_labeller="env", pref_action=False, pref_pairs=8, pref_epochs=2)
    knowledge = PrefKnowledge(config, tmp_path, lambda: pytest.fail("the env labeller asks no LLM"))
    knowledge.label()
    rows = [json.loads(line) for line in (tmp_path / "preferences.jsonl").read_text().splitlines()]
    assert rows and not any("Action:" in row["a"] + row["b"] for row in rows)
    assert knowledge.potential().with_action is False


def test_the_env_prefers_the_snippet_nearer_the_target_and_agreement_counts_decisive_labels():
    near, far, unknown = (Step("m", "go forward", "x", 0.0, d) for d in (2, 5, None))
    assert env_preference(near, far) == A_BETTER and env_preference(far, near) == B_BETTER
    assert env_preference(near, near) is None and env_preference(near, unknown) is None
    share, pairs = agreement(
        [A_BETTER, B_BETTER, EQUAL, None, A_BETTER], [A_BETTER, A_BETTER, A_BETTER, B_BETTER, None]
    )
    assert (share, pairs) == (0.5, 2)
    assert math.isnan(agreement([EQUAL], [A_BETTER])[0])


def test_label_agreement_on_scripted_labels(tmp_path):
    config = BKConfig(shaping="pref", pref_pairs=12, pref_epochs=2, pref_layers=1, pref_width=16, seed=3, pref_window=1)
    steps = random_steps(config.env_id, 2 * config.pref_pairs, config.knowledge_seed)
    truth = [env_preference(a, b) for a, b in zip(steps[:12], steps[12:], strict=True)]
    assert sum(t is not None for t in truth) >= 4, "the sampled pairs should mostly differ in distance"
    # right on even pairs, wrong on odd ones, unparseable on every third
    answers, expected = [], []
    for index, env in enumerate(truth):
        if index % 3 == 2:
            answers.append("I am not sure.")
            continue
        right = env if env is not None else A_BETTER
        label = right if index % 2 == 0 else 1.0 - right
        answers.append("[Rank] " + ("A > B" if label == A_BETTER else "B > A"))
        if env is not None:
            expected.append(label == env)
    backend = Scripted(answers)
    knowledge = PrefKnowledge(config, tmp_path, lambda: backend)
    metrics = knowledge.label()
    assert metrics["pref/unparsed"] == 4 and metrics["pref/decisive"] == 8
    assert metrics["pref/agreement_pairs"] == len(expected)
    assert metrics["pref/label_agreement"] == pytest.approx(sum(expected) / len(expected))
    assert metrics["pref_trained"] == 1.0 and 0.0 <= metrics["pref/scorer_agreement"] <= 1.0
    assert backend.asked[0][0]["content"].startswith(SYSTEM.split("{environment}")[0])
    assert SNIPPET_ONE_STEP in backend.asked[0][0]["content"]
    rows = [json.loads(line) for line in (tmp_path / "preferences.jsonl").read_text().splitlines()]
    assert [row["env_preference"] for row in rows] == truth

    restored = PrefKnowledge(config, tmp_path, lambda: pytest.fail("a restored run asks no LLM"))
    restored.restore(json.loads(json.dumps(knowledge.state())), knowledge.tensors())
    obs = {"mission": "go to the red ball", "text": steps[0].observation}
    assert restored.potential()(obs, {"action": 1}) == pytest.approx(knowledge.potential()(obs, {"action": 1}))


def test_the_env_labeller_labels_by_the_envs_progress_without_asking_the_llm(tmp_path):
    config = BKConfig(
        shaping="pref",
        pref_labeller="env",
        pref_pairs=24,
        pref_epochs=30,
        pref_layers=1,
        pref_width=16,
        seed=3,
        pref_window=1,
    )
    knowledge = PrefKnowledge(config, tmp_path, lambda: pytest.fail("the env labeller asks no LLM"))
    metrics = knowledge.label()
    steps = random_steps(config.env_id, 2 * config.pref_pairs, config.knowledge_seed)
    truth = [env_preference(a, b) for a, b in zip(steps[:24], steps[24:], strict=True)]
    rows = [json.loads(line) for line in (tmp_path / "preferences.jsonl").read_text().splitlines()]
    assert [row["label"] for row in rows] == [EQUAL if t is None else t for t in truth]
    assert [(row["a"], row["b"]) for row in rows] == [
        (step_snippet(a), step_snippet(b)) for a, b in zip(steps[:24], steps[24:], strict=True)
    ]
    assert metrics["pref/label_agreement"] == 1.0 and metrics["pref/unparsed"] == 0
    assert metrics["pref_trained"] == 1.0 and metrics["pref/scorer_agreement"] > 0.5


def test_every_run_seed_labels_the_same_pairs_and_trains_the_same_scorer_as_the_original(tmp_path):
    """The original labels once (seed 42) and trains every RL seed on that knowledge; ``labelling_seed: null``
    draws the pairs and the scorer from the run's seed instead."""

    def labelled(seed: int, labelling_seed: int | None) -> tuple[list[str], torch.Tensor]:
        config = BKConfig(
            shaping="pref", pref_labeller="env", pref_pairs=8, pref_epochs=2, pref_layers=1, pref_width=16,
            pref_window=2, seed=seed, labelling_seed=labelling_seed,
        )  # fmt: skip
        folder = tmp_path / f"{seed}-{labelling_seed}"
        folder.mkdir()
        knowledge = PrefKnowledge(config, folder, lambda: pytest.fail("the env labeller asks no LLM"))
        knowledge.label()
        return (folder / "preferences.jsonl").read_text().splitlines(), knowledge.tensors()["score.weight"]

    pairs_0, head_0 = labelled(0, 42)
    pairs_1, head_1 = labelled(1, 42)
    assert BKConfig().labelling_seed == 42 and BKConfig(seed=5).knowledge_seed == 42
    assert pairs_0 == pairs_1 and torch.equal(head_0, head_1)
    per_seed_0, _ = labelled(0, None)
    per_seed_1, _ = labelled(1, None)
    assert per_seed_0 != per_seed_1 and BKConfig(seed=5, labelling_seed=None).knowledge_seed == 5


def test_an_unknown_labeller_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"pref_labeller must be one of \['llm', 'env'\], got 'human'"):
        BKConfig(shaping="pref", pref_labeller="human")


def test_without_a_decisive_label_there_is_no_scorer(tmp_path):
    config = BKConfig(shaping="pref", pref_pairs=2)
    knowledge = PrefKnowledge(config, tmp_path, lambda: Scripted(["[Rank] A = B", "no idea"]))
    assert knowledge.label()["pref_trained"] == 0.0
    assert knowledge.potential() is None and knowledge.tensors() == {}


def test_the_original_goal_and_preference_prompts_come_from_verified_copies(tmp_path, monkeypatch):
    files = {
        "prompts/bk/preference_labeling/system.txt": "Judge two segments.\n{environment_description}\nRank them.",
        "prompts/bk/preference_labeling/user.txt": "Segment A:\n{desc_a}\n\nSegment B:\n{desc_b}\n",
        "prompts/bk/goal_suggestion/system.txt": "Suggest goals.",
        "prompts/bk/goal_suggestion/user.txt": "Observations:\n{desc}\n\nList:\n- ...\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        real = PROMPT_ASSETS[name]
        digest = hashlib.sha256(text.encode()).hexdigest()
        fake = Asset(real.name, real.source, real.upstream_path, len(text.encode()), digest, "test")
        monkeypatch.setitem(PROMPT_ASSETS, name, fake)
    monkeypatch.setenv("TEXTENVS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TEXTENVS_OFFLINE", "1")
    backend = Scripted(["[Rank] B > A", "- go to the red ball"])
    labels = label_pairs(backend, "babyai_text", [("snippet one", "snippet two")], prompt_source="original")
    assert labels[0].label == B_BETTER
    assert backend.asked[0] == [
        {"role": "system", "content": f"Judge two segments.\n{ENVIRONMENTS['babyai_text']}\nRank them."},
        {"role": "user", "content": "Segment A:\nsnippet one\n\nSegment B:\nsnippet two\n"},
    ]
    step = Step("go to the red ball", "turn left", "You see a wall 1 step left", 0.0, 4)
    proposal = propose_goals(
        backend, "babyai_text", step.mission, [step], rounds=1, per_round=1, prompt_source="original"
    )
    assert proposal.goals == ["go to the red ball"]
    assert backend.asked[1][0] == {"role": "system", "content": "Suggest goals."}
    assert backend.asked[1][2]["content"] == (
        f"Observations:\n{describe_steps(step.mission, [step])}\n\nList:\n- ...\n"
    )


# ---------------------------------------------------------------- windows (pref_window)
WINDOW_GOLDEN = json.loads((Path(__file__).parent / "golden" / "bk_pref_window.json").read_text())
#: The golden stream's symbols as commands: the action taken from observation [e, k] is "act e k".
SYMBOL_COMMANDS = [f"act {e} {k}" for e in range(4) for k in range(WINDOW_GOLDEN["steps"])]


class SymbolStream(gym.Env):
    """Env ``index`` of the golden window stream: the observation at step k of episode e reads "obs e k";
    episodes end where the golden ``ends`` say."""

    observation_space = spaces.Dict({"text": spaces.Text(64), "mission": spaces.Text(64)})
    action_space = spaces.Discrete(len(SYMBOL_COMMANDS))

    def __init__(self, index: int):
        self.ends = {step for step, env in WINDOW_GOLDEN["ends"] if env == index}
        self.t, self.episode, self.k = 0, 0, 0

    def obs(self) -> dict[str, str]:
        return {"mission": "m", "text": f"obs {self.episode} {self.k}"}

    def reset(self, *, seed=None, options=None):
        return self.obs(), {}

    def step(self, action):
        done = self.t in self.ends
        self.t += 1
        self.episode, self.k = (self.episode + 1, 0) if done else (self.episode, self.k + 1)
        return self.obs(), 0.0, done, False, {}


def _symbols(snippet: str) -> tuple[list[int] | None, list[int]]:
    """(the action's [e, k] or None, the observation's [e, k]) of a snippet of the symbol stream."""
    lines = snippet.splitlines()
    action = lines[1].removeprefix("Action: ")
    seen = [int(x) for x in lines[3].split()[1:]]
    return (None if action.startswith("none") else [int(x) for x in action.split()[1:]]), seen


def test_phis_window_rolls_per_episode_and_pads_with_its_first_step_as_the_originals():
    horizon = WINDOW_GOLDEN["horizon"]
    scorer = SnippetScorer(3, width=8, layers=1, max_tokens=4 * horizon)
    for index in range(WINDOW_GOLDEN["envs"]):
        potential = PrefPotential(scorer, ["act", "obs", "m"], 4, SYMBOL_COMMANDS, window=horizon)
        windows: list[tuple[str, ...]] = []
        potential.score = lambda window, seen=windows: seen.append(window) or 0.0
        env = PreActionPotential(SymbolStream(index), potential, history=horizon - 1)
        obs, _ = env.reset()
        for _ in range(WINDOW_GOLDEN["steps"]):
            e, k = (int(x) for x in obs["text"].split()[1:])
            obs, _, terminated, _, _ = env.step(SYMBOL_COMMANDS.index(f"act {e} {k}"))
            if terminated:
                obs, _ = env.reset()
        for t, window in enumerate(windows):
            actions, seen = zip(*map(_symbols, window), strict=True)
            # the original's slots, oldest first, filled with the episode's first step at its start, rolled
            # on each step and refilled at each episode's start: ours are its last `horizon` slots over our
            # snippets (the action that led to the observation, the observation)
            assert list(seen) == WINDOW_GOLDEN["buffer_obs"][t][index][1:], t
            # the actions are those the original's model reads at step t; where it repeats the episode's
            # first action as padding, ours has none (the padding snippet is the episode's first, no action)
            model_actions = WINDOW_GOLDEN["model_actions"][t][index]
            first = [seen[0][0], 0]
            for ours, original in zip(actions, model_actions, strict=True):
                assert ours == original if ours is not None else original == first, (t, actions, model_actions)


def test_phi_at_step_t_scores_the_window_of_the_last_steps_as_the_scorers_input():
    vocabulary = build_vocabulary(SNIPPETS_BETTER + SNIPPETS_WORSE)
    torch.manual_seed(0)
    scorer = SnippetScorer(len(vocabulary), width=16, layers=1, max_tokens=3 * 24)
    potential = PrefPotential(scorer, vocabulary, 24, COMMANDS, window=3)
    mission = "go to the red ball"
    history = [(None, {"mission": mission, "text": "You see a wall 1 steps left"})]
    obs = {"mission": mission, "text": "You see a red ball 1 steps forward"}
    expected_window = (SNIPPETS_WORSE[0].replace("turn left", "none (the episode starts)"),) * 2 + (SNIPPETS_BETTER[0],)
    assert potential.snippets(obs, {"action": 2, "history": history}) == expected_window  # padded at the start
    history += [(1, {"mission": mission, "text": f"You see a wall {n} steps left"}) for n in (2, 3)]
    window = potential.snippets(obs, {"action": "go forward", "history": history})
    assert window == (
        SNIPPETS_WORSE[1].replace("turn left", "turn right"),
        SNIPPETS_WORSE[2].replace("turn left", "turn right"),
        SNIPPETS_BETTER[0],
    )
    tokens = encode_windows([window], vocabulary, 24)
    assert tokens.shape == (1, 72) and tokens[0, 24] == tokens[0, 0] == vocabulary.index("mission") + 2
    assert potential(obs, {"action": 2, "history": history}) == pytest.approx(scorer(tokens)[0].item())


def test_labelling_compares_windows_of_consecutive_steps_and_trains_on_their_tokens(tmp_path):
    windows = random_windows("BabyAI-Text-GoToLocal-RedBall-S20-v0", 6, 3, 3)
    assert all(len(w) == 3 and all(step.action is not None for step in w) for w in windows)
    text = window_text(windows[0])
    assert text.startswith("Step 1:\nMission:") and "\n\nStep 3:\n" in text and "Step 4" not in text
    assert window_text(windows[0][:1]) == step_snippet(windows[0][0])
    config = BKConfig(
        shaping="pref", pref_pairs=3, pref_epochs=2, pref_layers=1, pref_width=16, labelling_seed=3, pref_window=3
    )
    backend = Scripted(["[Rank] A > B", "[Rank] B > A", "[Rank] A > B"])
    knowledge = PrefKnowledge(config, tmp_path, lambda: backend)
    assert knowledge.history == 2 and knowledge.label()["pref_trained"] == 1.0
    assert SNIPPET_STEPS in backend.asked[0][0]["content"]
    assert (
        backend.asked[0][1]["content"]
        == f"Snippet A:\n{window_text(windows[0])}\n\nSnippet B:\n{window_text(windows[3])}\n"
    )
    assert knowledge.scorer.positions.num_embeddings == 3 * config.pref_max_tokens
    assert knowledge.potential().window == 3


def test_window_1_is_the_single_snippet():
    texts = SNIPPETS_BETTER + SNIPPETS_WORSE
    vocabulary = build_vocabulary(texts)
    assert torch.equal(encode_windows([(t,) for t in texts], vocabulary, 24), encode(texts, vocabulary, 24))
    steps = random_steps("BabyAI-Text-GoToLocal-RedBall-S20-v0", 5, 7)
    assert random_windows("BabyAI-Text-GoToLocal-RedBall-S20-v0", 5, 7, 1) == [(step,) for step in steps]
    scorer, _, _, _, vocabulary = _scorer_and_data()
    potential = PrefPotential(scorer, vocabulary, 24, COMMANDS)
    obs = {"mission": "go to the red ball", "text": "You see a red ball 1 steps forward"}
    history = [(0, {"mission": "go to the red ball", "text": "You see a wall 1 steps left"})]
    assert potential.snippets(obs, {"action": 2, "history": history}) == (SNIPPETS_BETTER[0],)
    assert BKConfig().pref_window == 5
    with pytest.raises(ValueError, match="pref_window"):
        BKConfig(shaping="pref", pref_window=0)


def test_the_answer_cut_check_matches_answers_by_messages_and_compares_their_labels(tmp_path):
    check = load_script("benchmarks/methods/bk/answer_cut_check.py", "answer_cut_check")

    def recording(path: Path, answers: dict[str, str], max_tokens: int | None) -> Path:
        calls = [
            {"kind": "chat", "request": {"messages": [{"role": "user", "content": q}], "max_tokens": max_tokens},
             "response": answer}
            for q, answer in answers.items()
        ]  # fmt: skip
        path.write_text("".join(json.dumps(call) + "\n" for call in calls))
        return path

    looping = "[Thoughts]\n" + "A moves. " * 200
    whole = {"q1": "[Thoughts]\nA turns.\n[Rank]\nA > B", "q2": looping + "\n[Rank]\nB > A", "q3": "[Rank] A = B"}
    cut = {"q1": whole["q1"], "q2": looping[:100], "q4": "[Rank] B > A"}
    result = check.compare(recording(tmp_path / "whole.jsonl", whole, None), recording(tmp_path / "cut.jsonl", cut, 8))
    assert result["answers_compared"] == 2 and result["cut_is_start_of_whole"] == 2 and result["cut_shorter"] == 1
    assert result["same_label"] == 1 and result["labelled_whole"] == 2 and result["labelled_cut"] == 1
    assert result["max_tokens"] == {"whole": ["None"], "cut": ["8"]}
    assert result["whole_chars_of_cut_answers"] == [len(whole["q2"])]
