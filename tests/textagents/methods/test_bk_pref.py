"""BK-Pref: the rank parser, the Bradley-Terry loss against a hand computation (with the original's label
smoothing), training steps that lower it, the scorer as a potential, the labels' agreement with the env's
progress signal on scripted labels, and the original preference and goal prompts from verified copies."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import torch

from tests.textagents.methods.scripted_llm import Scripted
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import ENVIRONMENTS
from textagents.methods.bk.goal_prompt import describe_steps, propose_goals
from textagents.methods.bk.pref_model import (
    SnippetScorer,
    bradley_terry_loss,
    build_vocabulary,
    encode,
    train_scorer,
)
from textagents.methods.bk.pref_potential import PrefKnowledge, PrefPotential, agreement, env_preference
from textagents.methods.bk.pref_prompt import (
    A_BETTER,
    B_BETTER,
    EQUAL,
    SYSTEM,
    label_pairs,
    parse_preference,
    snippet_text,
)
from textagents.methods.bk.samples import Step, random_steps
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
    config = BKConfig(shaping="pref", pref_pairs=12, pref_epochs=2, pref_layers=1, pref_width=16, seed=3)
    steps = random_steps(config.env_id, 2 * config.pref_pairs, config.seed)
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
    rows = [json.loads(line) for line in (tmp_path / "preferences.jsonl").read_text().splitlines()]
    assert [row["env_preference"] for row in rows] == truth

    restored = PrefKnowledge(config, tmp_path, lambda: pytest.fail("a restored run asks no LLM"))
    restored.restore(json.loads(json.dumps(knowledge.state())), knowledge.tensors())
    obs = {"mission": "go to the red ball", "text": steps[0].observation}
    assert restored.potential()(obs, {"action": 1}) == pytest.approx(knowledge.potential()(obs, {"action": 1}))


def test_the_env_labeller_labels_by_the_envs_progress_without_asking_the_llm(tmp_path):
    config = BKConfig(
        shaping="pref", pref_labeller="env", pref_pairs=24, pref_epochs=30, pref_layers=1, pref_width=16, seed=3
    )
    knowledge = PrefKnowledge(config, tmp_path, lambda: pytest.fail("the env labeller asks no LLM"))
    metrics = knowledge.label()
    steps = random_steps(config.env_id, 2 * config.pref_pairs, config.seed)
    truth = [env_preference(a, b) for a, b in zip(steps[:24], steps[24:], strict=True)]
    rows = [json.loads(line) for line in (tmp_path / "preferences.jsonl").read_text().splitlines()]
    assert [row["label"] for row in rows] == [EQUAL if t is None else t for t in truth]
    assert metrics["pref/label_agreement"] == 1.0 and metrics["pref/unparsed"] == 0
    assert metrics["pref_trained"] == 1.0 and metrics["pref/scorer_agreement"] > 0.5


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
