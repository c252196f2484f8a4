"""The LLM probe set (benchmarks/llm_probe/probe.py): every probe end to end on the tiny random model, the
agreement metrics on hand-made models, the outcomes of BK-Code's check, resuming and bad arguments."""

from __future__ import annotations

import json
import sys

import pytest

from tests.scripts import load_script
from textagents.llm.accounting import TokenUsage


@pytest.fixture(scope="module")
def probe():
    module = load_script("benchmarks/llm_probe/probe.py", "llm_probe")
    yield module
    del sys.modules["llm_probe"]


class Fake:
    """A backend whose ``score`` and ``chat`` come from functions of the context / messages."""

    model_name = "fake"

    def __init__(self, score=None, chat=None):
        self._score, self._chat, self.usage = score, chat, TokenUsage()

    def score(self, contexts, candidates):
        return [self._score(c, options) for c, options in zip(contexts, candidates, strict=True)]

    def chat(self, messages, **sampling):
        return self._chat(messages)


def backends_of(probe, fake):
    return probe.Backends("fake", backend="transformers", built={"transformers": fake})


def in_unit_interval(rate):
    return rate["value"] is None or (
        0.0 <= rate["value"] <= 1.0 and rate["ci95"][0] <= rate["value"] <= rate["ci95"][1]
    )


@pytest.mark.slow
def test_every_probe_runs_end_to_end_on_the_tiny_model_and_the_table_is_rendered(probe, tmp_path):
    assert probe.main(["--model", "tiny-causal-lm", "--n", "1", "--threads", "1", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "tiny-causal-lm.json").read_text())
    assert set(results["probes"]) == set(probe.PROBES)
    for name, result in results["probes"].items():
        assert result["n"] == 1 and result["timing"]["calls"] >= 1 and result["timing"]["seconds_per_call"] >= 0, name
    probes = results["probes"]
    assert probes["glam"]["chance"] == pytest.approx(1 / 6)
    for rate in (
        probes["glam"]["agreement"],
        probes["ellm"]["strict_parse_failure"],
        probes["ellm"]["valid"],
        probes["bk_code"]["pass"],
        probes["bk_pref"]["unparsed"],
        probes["llmp"]["zero_shot"]["parse_rate"],
        probes["llmp"]["one_shot"]["admissible_rate"],
        probes["lgqd_describe"]["described"],
        probes["lgqd_judge"]["parsed"],
    ):
        assert in_unit_interval(rate)
    assert sum(probes["bk_code"]["outcomes"].values()) == 1
    table = (tmp_path / "probe.md").read_text()
    assert "| probe | tiny-causal-lm |" in table and "GLAM: agreement with the bot" in table
    assert (tmp_path / "probe.png").stat().st_size > 0


def test_glam_agreement_is_one_for_a_model_that_prefers_the_bot_and_chance_for_a_uniform_one(probe):
    states = probe.glam_states(20, seed=0)
    bot = {context: candidates[index] for context, candidates, index in states}
    assert len(bot) == len(states)  # every context distinct, so the lookup below is the bot's choice

    def prefers_bot(context, options):
        return [0.0 if option == bot[context] else -5.0 for option in options]

    agreeing = probe.probe_glam(backends_of(probe, Fake(score=prefers_bot)), probe.Probe(20))
    assert agreeing["agreement"]["value"] == 1.0 and agreeing["mean_pi_bot"]["value"] > 0.3
    uniform = probe.probe_glam(
        backends_of(probe, Fake(score=lambda c, options: [-3.0] * len(options))), probe.Probe(20)
    )
    assert uniform["agreement"]["value"] == pytest.approx(1 / 6) == pytest.approx(uniform["chance"])
    assert uniform["mean_pi_bot"]["value"] == pytest.approx(1 / 6)
    assert uniform["timing"]["calls"] == 20


CODE = "```python\ndef potential(observation: str) -> float:\n    return {body}\n```"


def test_bk_code_sorts_answers_by_the_labelling_check_and_correlates_running_codes(probe, monkeypatch):
    answers = iter(
        [
            "no code here",
            CODE.format(body="0.0"),
            CODE.format(body="float(len(observation))"),
            CODE.format(body="float(-len(observation))"),
            "```python\nimport os\ndef potential(observation: str) -> float:\n    return 1.0\n```",
        ]
    )
    monkeypatch.setattr(probe, "BK_EPISODES", 3)
    result = probe.probe_bk_code(backends_of(probe, Fake(chat=lambda messages: next(answers))), probe.Probe(5))
    assert result["outcomes"] == {"pass": 2, "constant": 1, "error": 0, "refused": 1, "no_code_block": 1}
    assert result["pass"]["value"] == pytest.approx(2 / 5)
    assert len(result["spearman_per_code"]) == 3  # the constant code ran too; its correlation is undefined
    assert result["spearman_per_code"][0]["value"] is None
    assert all(-1 <= c["value"] <= 1 for c in result["spearman_per_code"][1:])


def test_bk_pref_agreement_counts_the_labels_that_match_the_env(probe):
    from textagents.methods.bk.config import BKConfig

    pairs = probe.decisive_pairs(BKConfig().env_id, 6, 0, BKConfig().pref_window)
    truth = iter("[Rank]\nA > B" if label == 0.0 else "[Rank]\nB > A" for _, _, label in pairs)
    result = probe.probe_bk_pref(backends_of(probe, Fake(chat=lambda messages: next(truth))), probe.Probe(6))
    assert result["agreement"]["value"] == 1.0 and result["decisive"]["value"] == 1.0
    assert result["unparsed"]["value"] == 0.0


def test_a_rerun_skips_finished_probes_unless_forced_or_resized(probe, tmp_path, monkeypatch):
    runs = []

    def fake_probe(backends, size):
        runs.append(size.n)
        return {"rate": probe.wilson(1, 2), "timing": {"calls": 1, "seconds": 0.0, "seconds_per_call": 0.0}}

    monkeypatch.setattr(probe, "RUNNERS", {**probe.RUNNERS, "glam": fake_probe})
    backends = probe.Backends("fake", built={})
    sizes = {**probe.DEFAULT_N, "glam": 3}
    probe.run_probes(backends, "fake", ["glam"], sizes, tmp_path, force=False)
    probe.run_probes(backends, "fake", ["glam"], sizes, tmp_path, force=False)
    assert runs == [3]
    probe.run_probes(backends, "fake", ["glam"], sizes, tmp_path, force=True)
    probe.run_probes(backends, "fake", ["glam"], {**sizes, "glam": 4}, tmp_path, force=False)
    assert runs == [3, 3, 4]
    assert json.loads((tmp_path / "fake.json").read_text())["probes"]["glam"]["n"] == 4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "tiny-causal-lm", "--probes", "glam,nope"], "unknown probe nope; valid: glam, ellm"),
        (["--model", "tiny-causal-lm", "--n", "nope=3"], "unknown probe 'nope'"),
        (["--model", "tiny-causal-lm", "--n", "glam=0"], "positive integer"),
        (["--model", "no-such-model-xyz"], "--model 'no-such-model-xyz'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_naming_them(probe, tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        probe.main([*argv, "--out", str(tmp_path)])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in error
    assert not list(tmp_path.iterdir())


def test_wilson_interval_matches_the_formula(probe):
    rate = probe.wilson(0, 10)
    assert rate["value"] == 0.0 and rate["ci95"][0] == 0.0 and rate["ci95"][1] == pytest.approx(0.2775, abs=1e-4)
    assert probe.wilson(0, 0)["value"] is None
