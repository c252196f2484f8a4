"""BK-Code's labelling loop with a scripted LLM (no code, refused code, failing code, good code), and the bk
method end to end on a replayed recording of a scripted LLM for each shaping: the kept code shapes PPO's
reward in the sandbox, BK-Goal's goals and BK-Pref's scorer are kept in the run and restored from checkpoints."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from tests.textagents.methods.sandbox_support import UNSAFE_LOCAL_EXEC_HERE, needs_bubblewrap
from tests.textagents.methods.scripted_llm import ContextLimited, Scripted
from textagents.llm.record import RecordingBackend
from textagents.methods.bk.code_potential import ERROR_FEEDBACK, SYSTEM_TASK, extract_code, write_potential
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.environments import family_name
from textagents.methods.bk.isolation import BUBBLEWRAP, UNSAFE_LOCAL_EXEC
from textagents.methods.bk.method import BKMethod
from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.core.method import RunContext
from textagents.methods.core.run_dir import RunDir, RunDirWarning
from textagents.methods.core.runner import LLMChoice, run_method

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "bk" / "smoke.yaml"
GOOD = (
    "```python\nimport re\ndef potential(observation):\n    return float(len(re.findall('red ball', observation)))\n```"
)
ISOLATION = UNSAFE_LOCAL_EXEC if UNSAFE_LOCAL_EXEC_HERE else BUBBLEWRAP


def run_bk(config, out, **kwargs):
    """``run_method("bk", ...)`` in the sandbox this machine has (bubblewrap wherever it runs, always in CI)."""
    return run_method("bk", config, out, unsafe_local_exec=UNSAFE_LOCAL_EXEC_HERE, **kwargs)


def bk_context(run_dir, llm):
    return RunContext(run_dir, llm, UNSAFE_LOCAL_EXEC_HERE)


def test_the_code_block_is_taken_as_the_original_does():
    assert extract_code("Here:\n```python\ndef potential(o):\n    return 1.0\n```\nDone.") == (
        "def potential(o):\n    return 1.0\n"
    )
    assert extract_code("def potential(o): return 1.0") is None


def test_errors_are_fed_back_until_code_runs_in_the_sandbox():
    backend = Scripted(
        [
            "I would reward being near the goal.",
            "```python\nimport os\ndef potential(o):\n    return 1.0\n```",
            "```python\ndef potential(o):\n    return 1 / 0\n```",
            GOOD,
        ]
    )
    samples = ["You see a red ball 2 steps forward", "You see a wall 1 step left"]
    result = write_potential(backend, "babyai_text", samples, rounds=4, isolation=ISOLATION)
    assert result.code is not None and "red ball" in result.code
    assert [r["error"] is None for r in result.rounds] == [False, False, False, True]
    assert result.rounds[1]["error"].startswith("refused before running: import of 'os'")
    assert result.rounds[2]["error"].startswith("ZeroDivisionError")
    assert result.rounds[3]["values"] == [1.0, 0.0]
    assert backend.asked[0][0] == {"role": "system", "content": SYSTEM_TASK}
    assert backend.asked[2][-1]["content"] == ERROR_FEEDBACK.format(error=result.rounds[1]["error"])


@needs_bubblewrap
def test_a_code_round_that_does_not_fit_the_context_is_asked_without_the_oldest_exchange():
    rambling = "I will think about it. " * 1000  # no code: round 1 fails and its answer fills the context
    backend = ContextLimited([rambling, GOOD], context_chars=len(rambling) // 2)
    samples = ["You see a red ball 2 steps forward", "You see a wall 1 step left"]
    result = write_potential(backend, "babyai_text", samples, rounds=2, isolation=ISOLATION)
    assert result.code is not None and result.rounds[1]["values"] == [1.0, 0.0]
    assert [r["trimmed_messages"] for r in result.rounds] == [0, 1] and backend.refused == 1
    assert [m["role"] for m in backend.asked[1]] == ["system", "system", "user", "user"]  # the feedback is kept
    assert backend.asked[1][-1]["content"] == ERROR_FEEDBACK.format(error=result.rounds[0]["error"])


@pytest.mark.parametrize("shaping", ["code", "goal", "pref"])
@pytest.mark.parametrize("max_tokens", [None, 384])
def test_labelling_samples_at_temperature_0_5_with_no_answer_limit_unless_llm_max_tokens(tmp_path, shaping, max_tokens):
    """The original sends no ``max_tokens`` (``utils/azure_llm.py:4-10``): an answer runs until the model stops;
    ``llm_max_tokens`` cuts every labeller's answers."""
    backend = Scripted([], default="I cannot tell")
    config = load_config(BKConfig, _smoke(tmp_path, shaping), {"llm_max_tokens": max_tokens})
    method = BKMethod(config, bk_context(tmp_path, lambda: backend))
    method.knowledge.label()
    method.close()
    expected = {"max_tokens": max_tokens, "temperature": 0.5, "seed": 0}
    assert BKConfig().llm_max_tokens is None
    assert backend.sampling and all(s == expected for s in backend.sampling)


def test_a_limit_on_the_answers_must_be_positive():
    with pytest.raises(ValueError, match=r"llm_max_tokens must be > 0 \(or null: no limit, the original's\), got 0"):
        BKConfig(llm_max_tokens=0)


def test_the_method_shapes_ppo_with_the_kept_code_from_a_replayed_recording(tmp_path):
    calls = tmp_path / "calls.jsonl"
    samples_run = tmp_path / "record"
    samples_run.mkdir()
    backend = RecordingBackend(Scripted(["no code here", GOOD]), calls)
    method = BKMethod(load_config(BKConfig, SMOKE), bk_context(samples_run, lambda: backend))
    method.knowledge.label()  # records the two answers for exactly the requests the run will make
    method.close()

    out = tmp_path / "run"
    run_bk(SMOKE, out, llm=LLMChoice(replay=str(calls)), progress=False)
    assert (out / "potential.py").read_text() == extract_code(GOOD)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["code_kept"] == 1.0 and first["code_rounds_without_error"] == 1
    assert first["sandbox/requests"] >= 32 and first["sandbox/failures"] == 0
    assert [r["frames"] for r in records if r["kind"] == "train"] == [32, 64]
    assert 0.0 <= records[-1]["success_rate"] <= 1.0


def _smoke(tmp_path, shaping: str) -> Path:
    """The smoke config with ``shaping`` set, labelling on samples that show the mission the run meets (labelling
    seed 0: "go to the red ball"), so that a recording of the labelling answers the whole run."""
    config = yaml.safe_load(SMOKE.read_text())
    path = tmp_path / f"smoke-{shaping}.yaml"
    path.write_text(yaml.safe_dump({**config, "shaping": shaping, "labelling_seed": 0}))
    return path


def _record(tmp_path, config_path: Path, answers: list[str]) -> Path:
    """Records ``answers`` for exactly the requests a run of ``config_path`` makes while labelling."""
    calls = tmp_path / "calls.jsonl"
    folder = tmp_path / "record"
    folder.mkdir()
    backend = RecordingBackend(Scripted(answers), calls)
    method = BKMethod(load_config(BKConfig, config_path), bk_context(folder, lambda: backend))
    method.knowledge.label()
    method.close()
    return calls


def test_bk_goal_runs_from_a_replayed_recording_and_resumes_with_its_goals(tmp_path):
    config = _smoke(tmp_path, "goal")
    calls = _record(tmp_path, config, ["- go to the red ball\n- find the red ball", "- face the red ball"])
    out = tmp_path / "run"
    run_bk(config, out, llm=LLMChoice(replay=str(calls)), progress=False)
    goals = json.loads((out / "goals.json").read_text())
    assert goals["go to the red ball"]["goals"] == ["go to the red ball", "find the red ball", "face the red ball"]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"]
    assert train[0]["goal/missions"] == 1 and train[0]["goal/goals_per_mission"] == 3
    assert train[-1]["goal/phi_calls"] >= 64 and 0 <= train[-1]["goal/rewarded_share"] <= 1
    report = (out / "report.md").read_text()
    assert "## Background knowledge (goal)" in report
    assert "| shaped_return | n/a |" in report and not re.search(r"\bnan\b", report)  # 64 frames end no episode

    assert "shaping/mean" in train[-1]  # the original form's term, added to each rollout
    checkpoint = RunDir(out).load_checkpoint()
    method = BKMethod(load_config(BKConfig, config), bk_context(out, lambda: pytest.fail("no LLM on restore")))
    method.restore(checkpoint)
    assert method.knowledge.goals_for("go to the red ball") == goals["go to the red ball"]["goals"]
    assert method.lagged.state() == checkpoint.state["lagged_shaping"]  # its normaliser goes on from there
    method.close()


def test_bk_pref_trains_a_scorer_from_a_replayed_recording_and_keeps_it_in_checkpoints(tmp_path):
    config = _smoke(tmp_path, "pref")
    answers = ["[Thoughts] A sees more.\n[Rank]\nA > B", "[Rank] B > A", "I cannot tell", "[Rank] A = B"] + [
        "[Rank] B > A"
    ] * 2
    calls = _record(tmp_path, config, answers)
    out = tmp_path / "run"
    run_bk(config, out, llm=LLMChoice(replay=str(calls)), progress=False)
    labelled = [json.loads(line) for line in (out / "preferences.jsonl").read_text().splitlines()]
    assert [row["label"] for row in labelled] == [0.0, 1.0, None, 0.5, 1.0, 1.0]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["pref_trained"] == 1.0 and first["pref/unparsed"] == 1 and first["pref/decisive"] == 4
    assert first["pref/agreement_pairs"] <= 4 and first["pref/phi_calls"] >= 32
    assert "pref/label_agreement" in (out / "report.md").read_text()

    checkpoint = RunDir(out).load_checkpoint()
    assert any(key.startswith("knowledge.encoder.") for key in checkpoint.tensors)
    method = BKMethod(load_config(BKConfig, config), bk_context(out, lambda: pytest.fail("no LLM on restore")))
    method.restore(checkpoint)
    trained = {k[len("knowledge.") :]: v for k, v in checkpoint.tensors.items() if k.startswith("knowledge.")}
    for key, value in method.knowledge.scorer.state_dict().items():
        assert torch.equal(value, trained[key])
    method.close()


class Stopped(Exception):
    """The labelling process killed (the session ended)."""


def test_a_stopped_labelling_goes_on_from_the_llm_cache_and_other_seeds_ask_nothing(tmp_path, monkeypatch):
    from textagents.llm import llamacpp_backend

    class OneAtATime(Scripted):
        """A local model answering one conversation at a time, as llama.cpp; stopped at its ``stop_at``-th."""

        stop_at: int | None = None

        def __init__(self, model, n_ctx):
            super().__init__([], default="[Rank] A > B")

        def chat(self, messages, **sampling):
            if len(self.asked) + 1 == OneAtATime.stop_at:
                raise Stopped
            return super().chat(messages, **sampling)

    built: list[OneAtATime] = []

    def open_model(model, n_ctx):
        built.append(OneAtATime(model, n_ctx))
        return built[-1]

    monkeypatch.setattr(llamacpp_backend, "LlamaCppBackend", open_model)
    config = yaml.safe_load(_smoke(tmp_path, "pref").read_text())
    paths = {}
    for seed in (0, 1):
        paths[seed] = tmp_path / f"seed{seed}.yaml"
        paths[seed].write_text(yaml.safe_dump({**config, "model": "m", "llm_backend": "llamacpp", "seed": seed}))
    cache = LLMChoice(cache=str(tmp_path / "answers.sqlite"))

    OneAtATime.stop_at = 4
    with pytest.warns(RunDirWarning), pytest.raises(Stopped):
        run_bk(paths[0], tmp_path / "seed0", llm=cache, progress=False)
    OneAtATime.stop_at = None
    run_bk(paths[0], tmp_path / "seed0", llm=cache, progress=False)  # the same command again
    run_bk(paths[1], tmp_path / "seed1", llm=cache, progress=False)
    assert [len(backend.asked) for backend in built] == [3, 3, 0]  # 6 pairs, each asked once
    labelled = [(tmp_path / f"seed{seed}" / "preferences.jsonl").read_text() for seed in (0, 1)]
    assert labelled[0] == labelled[1] and len(labelled[0].splitlines()) == 6
    with pytest.raises(ConfigError, match=r"--llm-cache .* give one of them"):
        LLMChoice(cache=str(tmp_path / "answers.sqlite"), replay=str(tmp_path / "calls.jsonl"))


TREES = "```python\ndef potential(observation):\n    return float(observation.count('tree'))\n```"


def test_bk_code_runs_on_ellms_crafter_and_reports_achievements(tmp_path):
    config = tmp_path / "smoke-crafter.yaml"
    config.write_text(yaml.safe_dump({**yaml.safe_load(SMOKE.read_text()), "env_id": "Crafter-Text-ELLM-v0"}))
    calls = _record(tmp_path, config, [TREES, TREES])
    request = json.loads(calls.read_text().splitlines()[0])
    assert "Crafter, a 2D survival game" in json.dumps(request)  # the family's description, not BabyAI's
    out = tmp_path / "run"
    run_bk(config, out, llm=LLMChoice(replay=str(calls)), progress=False)
    assert (out / "potential.py").read_text() == extract_code(TREES)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r["kind"] == "eval"]
    assert evals and all(0 <= r["achievements"] <= 22 and r["crafter_score"] >= 0 for r in evals)
    assert records[0]["sandbox/failures"] == 0 and records[0]["sandbox/requests"] >= 32
    curves = BKMethod.comparison_curves(records)
    assert list(curves) == ["achievements per episode"] and len(curves["achievements per episode"]) == len(evals)


def test_shaping_refuses_a_family_it_has_no_description_for():
    with pytest.raises(ValueError, match=r"supports the .*babyai_text.*crafter_text.*'fastsim'"):
        family_name("Fastsim-Text-HardMaze-v0")
    with pytest.raises(ValueError, match="not a textenvs id"):
        family_name("CartPole-v1")


def test_a_potential_from_code_file_is_tried_in_the_sandbox_and_needs_no_llm(tmp_path):
    good, bad = tmp_path / "good.py.txt", tmp_path / "bad.py.txt"
    good.write_text(extract_code(TREES))
    bad.write_text("import os\ndef potential(observation):\n    return float(len(os.environ))\n")
    config = yaml.safe_load(SMOKE.read_text())
    path = tmp_path / "from-file.yaml"
    path.write_text(yaml.safe_dump({**config, "code_file": str(good)}))
    out = tmp_path / "run"
    run_bk(path, out, llm=LLMChoice(replay=str(tmp_path / "no-calls.jsonl")), progress=False)
    assert (out / "potential.py").read_text() == good.read_text()
    first = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert first["code_from_file"] == 1.0 and first["sandbox/requests"] >= 32 and first["sandbox/failures"] == 0

    for code_file, error in (
        (bad, r"does not run in the sandbox: refused before running.*os"),
        (tmp_path / "x", "does not exist"),
    ):
        method = BKMethod(
            BKConfig(**{**config, "code_file": str(code_file)}), bk_context(tmp_path, lambda: pytest.fail("no LLM"))
        )
        with pytest.raises((ValueError, FileNotFoundError), match=error):
            method.knowledge.label()
        method.close()


def test_a_checkpoint_keeps_adams_moments_and_the_generators_and_a_resumed_run_starts_new_episodes(tmp_path):
    config = _smoke(tmp_path, "none")
    out = tmp_path / "run"
    run_bk(config, out, llm=LLMChoice(replay=str(tmp_path / "no-calls.jsonl")), progress=False)
    checkpoint = RunDir(out).load_checkpoint()
    saved = {k[len("adam.") :]: v for k, v in checkpoint.tensors.items() if k.startswith("adam.")}
    assert saved, "the checkpoint keeps PPO's optimizer state"

    torch.manual_seed(123)
    np.random.seed(123)
    method = BKMethod(load_config(BKConfig, config), bk_context(out, lambda: pytest.fail("no LLM")))
    method.restore(checkpoint)
    moments = method.model.policy.optimizer.state_dict()["state"]
    for name, value in saved.items():
        index, key = name.split(".", 1)
        assert torch.equal(torch.as_tensor(moments[int(index)][key]), value)
    after_restore = (torch.rand(4), np.random.random(4))
    torch.set_rng_state(checkpoint.tensors["torch_rng"])
    position, has_gauss, cached = checkpoint.state["numpy_rng"]
    keys = checkpoint.tensors["numpy_rng_keys"].numpy().astype(np.uint32)
    np.random.set_state(("MT19937", keys, position, has_gauss, cached))
    assert torch.equal(after_restore[0], torch.rand(4))
    assert np.array_equal(after_restore[1], np.random.random(4))

    first_seeds = list(range(method.config.seed, method.config.seed + method.config.envs))
    assert method.model.get_env()._seeds != first_seeds  # not the first iteration's episodes again
    method.close()


# The first hostile tester's route through a real run: `sys` from an allowed module, past the static check.
SHELL_FROM_CODE_FILE = """
import collections
def potential(observation):
    try:
        collections._sys.modules["posix"].system("touch {target}")
    except Exception:
        pass
    return 1.0
"""


def _code_file_config(tmp_path: Path, code: str) -> Path:
    code_file = tmp_path / "potential.py.txt"
    code_file.write_text(code)
    path = tmp_path / "code-file.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(SMOKE.read_text()), "iterations": 1, "code_file": str(code_file)}))
    return path


@needs_bubblewrap
def test_a_hostile_code_file_in_a_real_run_reaches_nothing_on_the_host(tmp_path, capsys):
    from textagents.cli import main

    target = tmp_path / "pwned"
    config = _code_file_config(tmp_path, SHELL_FROM_CODE_FILE.format(target=target))
    assert main(["method", "run", "bk", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert not target.exists()
    record = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert record["sandbox/os_boundary"] == 1.0 and record["sandbox/requests"] >= 32


def test_without_bubblewrap_a_bk_code_run_is_refused_before_it_writes_anything(tmp_path, monkeypatch, capsys):
    from textagents.cli import main
    from textagents.methods.bk import isolation

    monkeypatch.setattr(isolation, "bubblewrap_problem", lambda: "bwrap not found")
    config, out = _code_file_config(tmp_path, extract_code(GOOD)), tmp_path / "run"
    assert main(["method", "run", "bk", str(config), "--out", str(out), "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "bwrap not found" in error and "--unsafe-local-exec" in error
    assert not out.exists()
    with pytest.warns(RuntimeWarning, match="no OS boundary"):
        assert (
            main(["method", "run", "bk", str(config), "--out", str(out), "--no-progress", "--unsafe-local-exec"]) == 0
        )
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert record["sandbox/os_boundary"] == 0.0 and record["sandbox/failures"] == 0
