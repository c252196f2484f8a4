"""Suite validation: a malformed suite fails before any episode runs, naming the file, the key and the valid
choices; the LLM agents are skipped with a notice when no model is configured."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from tests.textagents.bench_fixtures import SMALL_SUITE, SMALL_SUITE_EPISODES, write_suite
from tests.yaml_bomb import alias_bomb, run_bounded
from textagents.bench import SuiteError, load_suite
from textagents.bench.typecheck import describe, matches
from textagents.cli import main

REPO = Path(__file__).resolve().parents[2]


def suite_error(tmp_path: Path, text: str) -> str:
    path = write_suite(tmp_path, text, "bad.yaml")
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    return message


def test_the_small_suite_plans_every_agent_env_seed(tmp_path, data_dir):
    suite = load_suite(write_suite(tmp_path))
    tasks = suite.tasks()
    assert len(tasks) == SMALL_SUITE_EPISODES
    assert len({t.key for t in tasks}) == len(tasks)
    assert [e.seeds for e in suite.envs] == [tuple(range(8)), (3, 5, 7)]
    assert suite.envs[0].kwargs == {"max_steps": 40}


def test_unknown_env_id_names_the_key_and_the_closest_ids(tmp_path):
    message = suite_error(tmp_path, SMALL_SUITE.replace("BabyAI-Text-GoToLocal-v0", "BabyAI-Text-GoToLokal-v0"))
    assert "envs[0].id: unknown env id 'BabyAI-Text-GoToLokal-v0'" in message
    assert "'BabyAI-Text-GoToLocal-v0'" in message and "textenvs list" in message


def test_unknown_agent_kind_lists_the_valid_kinds(tmp_path):
    message = suite_error(tmp_path, SMALL_SUITE.replace("kind: expert", "kind: oracle"))
    assert "agents[1].kind: unknown agent kind 'oracle'" in message
    assert "valid: random, expert, sb3, llm-generate, llm-score" in message


def test_bad_kwarg_type_names_the_expected_type(tmp_path):
    message = suite_error(tmp_path, SMALL_SUITE.replace("max_steps: 40", "max_steps: forty"))
    assert "envs[0].kwargs.max_steps: expected int | None, got str 'forty'" in message


def test_unknown_kwarg_lists_the_valid_ones(tmp_path):
    message = suite_error(tmp_path, SMALL_SUITE.replace("max_steps: 25", "max_step: 25"))
    assert "envs[1].kwargs.max_step: unknown kwarg of Fastsim-Text-HardMaze-v0 'max_step'" in message
    assert "did you mean 'max_steps'" in message and "obs_mode" in message


def test_bad_kwarg_value_fails_when_the_env_is_built(tmp_path, data_dir):
    message = suite_error(tmp_path, SMALL_SUITE.replace("max_steps: 25", "max_steps: 25, obs_mode: voxels"))
    assert "envs[1] (Fastsim-Text-HardMaze-v0)" in message and "voxels" in message


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("seeds: {start: 0, count: 8}", "seeds: {start: 0, cnt: 8}", "seeds.cnt: unknown key 'cnt'"),
        ("seeds: [3, 5, 7]", "seeds: [3, 3]", "envs[1].seeds: expected a non-empty list of distinct ints"),
        ("name: small", "nam: small", "nam: unknown key 'nam' (did you mean 'name'?)"),
        ("{name: expert, kind: expert}", "{name: expert, kind: expert, temperature: 0.5}", "agents[1].temperature"),
        ("{name: expert, kind: expert}", "{name: random, kind: expert}", "agents: repeated agent names: 'random'"),
        (
            "{name: expert, kind: expert}",
            "{name: expert, kind: expert, envs: [Fastsim-Text-HardMaze]}",
            "agents[1].envs: unknown env name 'Fastsim-Text-HardMaze'",
        ),
        ("{name: random, kind: random}", "{name: ppo, kind: sb3}", "agents[0]: agent kind 'sb3' needs 'run'"),
        ("{name: random, kind: random}", "{name: ../random, kind: random}", "agents[0].name: expected a name"),
        ("{name: random, kind: random}", "{name: llm, kind: llm-score, temperature: hot}", "expected float"),
    ],
)
def test_malformed_suites(tmp_path, old, new, expected):
    assert old in SMALL_SUITE
    assert expected in suite_error(tmp_path, SMALL_SUITE.replace(old, new))


def test_not_yaml_and_missing_file(tmp_path):
    assert "not valid YAML" in suite_error(tmp_path, "envs: [\n")
    with pytest.raises(SuiteError, match="no such suite file"):
        load_suite(tmp_path / "absent.yaml")


def test_a_dry_run_refuses_an_alias_bomb_in_bounded_memory_and_time(tmp_path):
    suite = write_suite(tmp_path, alias_bomb("seeds") + "envs: [{id: BabyAI-Text-GoToLocal-v0}]\nagents: []\n")
    out = tmp_path / "run"
    result = run_bounded("textagents.cli", "bench", "run", str(suite), "--out", str(out), "--dry-run")
    assert result.stderr == f"error: {suite}: refusing YAML whose aliases expand it past 2,097,152 characters\n"
    assert result.returncode == 2 and not out.exists()


def test_a_huge_value_makes_a_short_message(tmp_path):
    message = suite_error(tmp_path, SMALL_SUITE.replace("name: small", f"max_steps: {list(range(20_000))}"))
    assert message.endswith(": max_steps: expected int, got list [0, 1, 2, 3, 4, 5, ...]"), message[:200]


def test_cli_refuses_a_malformed_suite_before_any_episode(tmp_path, capsys):
    suite = write_suite(tmp_path, SMALL_SUITE.replace("kind: expert", "kind: oracle"))
    out = tmp_path / "run"
    assert main(["bench", "run", str(suite), "--out", str(out), "--no-progress"]) == 2
    assert "agents[1].kind: unknown agent kind 'oracle'" in capsys.readouterr().err
    assert not out.exists()


def test_dry_run_refuses_an_sb3_agent_given_an_env_it_was_not_trained_for(tmp_path, capsys):
    baseline = REPO / "benchmarks" / "baselines" / "ppo_bow_babyai_gotoredballgrey"
    text = (
        "envs:\n  - id: BabyAI-Text-GoToLocal-v0\n  - id: Crafter-Text-MakeWoodPickaxe-v0\n"
        f"agents:\n  - {{name: ppo, kind: sb3, run: {baseline}}}\n"
    )
    suite, out = write_suite(tmp_path, text), tmp_path / "run"
    assert main(["bench", "run", str(suite), "--out", str(out), "--dry-run"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"error: {suite}: agent 'ppo' on env 'Crafter-Text-MakeWoodPickaxe-v0': the model of")
    assert "trained on BabyAI-Text-GoToRedBallGrey-v0" in error and "observation_space lacks ['direction']" in error
    assert error.endswith("list the envs this agent can play in its `envs:`") and not out.exists()
    restricted = text.replace(f"run: {baseline}}}", f"run: {baseline}, envs: [BabyAI-Text-GoToLocal-v0]}}")
    assert len(load_suite(write_suite(tmp_path, restricted)).tasks()) == 10


def test_llm_suite_skips_llm_agents_with_a_notice_when_no_model_is_given(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(tmp_path))  # SmolLM2 not downloaded
    suite = load_suite(REPO / "benchmarks" / "suites" / "llm.yaml")
    skipped = dict(suite.skipped)
    smollm2 = ["smollm2-generate", "smollm2-plan", "smollm2-score"]
    assert sorted(skipped) == ["llm-generate", "llm-plan", "llm-score", *smollm2]
    for name, reason in skipped.items():
        if name in smollm2:
            assert "fetch it once with `textagents download smollm2`" in reason
        else:
            assert "no model configured: pass --model PATH" in reason and "--base-url URL" in reason
    assert {a.kind for a in suite.agents} <= {"random", "expert"}


def test_llm_suite_runs_llm_agents_given_a_model(tiny_models, data_dir):
    suite = load_suite(REPO / "benchmarks" / "suites" / "llm.yaml", llm_overrides={"model": str(tiny_models.causal)})
    assert not suite.skipped
    kinds = {a.kind for a in suite.agents}
    assert {"llm-generate", "llm-score"} <= kinds
    options = next(a.options for a in suite.agents if a.kind == "llm-score")
    assert options.model == str(tiny_models.causal)


def test_every_suite_in_the_repository_is_valid(data_dir):
    for path in sorted((REPO / "benchmarks" / "suites").glob("*.yaml")):
        suite = load_suite(path)
        assert suite.tasks(), path


@pytest.mark.parametrize(
    ("value", "hint", "expected"),
    [
        (3, int, True),
        (True, int, False),
        (3, float, True),
        (True, float, False),
        ("a", str | None, True),
        (None, str | None, True),
        ("c", Literal["a", "b"], False),
        ([1, 2], tuple[int, ...], True),
        ([1, "x"], tuple[int, ...], False),
        ([1, 2], tuple[int, int, int], False),
        ({"a": 1}, dict[str, int], True),
        ({"a": "b"}, dict[str, int], False),
    ],
)
def test_type_hints_are_checked(value, hint, expected):
    assert matches(value, hint) is expected


def test_type_hint_descriptions():
    assert describe(int | None) == "int | None"
    assert describe(Literal["text", "pixels"]) == "one of 'text', 'pixels'"
