"""The methods base, end to end on the example method: configs checked, the run directory, kill -9 then
--resume giving the same metrics as an uninterrupted run, refusals, eval, and LLM calls recorded and replayed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.yaml_bomb import alias_bomb, run_bounded
from textagents.cli import main
from textagents.methods.core.compare import parse_setting, parse_vary
from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.core.method import RunContext
from textagents.methods.core.run_dir import RunDirError, RunDirWarning
from textagents.methods.core.runner import LLMChoice, evaluate_run, run_method
from textagents.methods.example.config import ExampleConfig
from textagents.methods.example.method import ExampleMethod
from textenvs.data import YAMLInputError

REPO = Path(__file__).resolve().parents[3]
SMOKE = REPO / "benchmarks" / "methods" / "example" / "smoke.yaml"


def _config(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _metrics(run_dir: Path) -> list[dict]:
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "time"} for r in lines]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("iteratons: 3\n", "unknown setting 'iteratons' \\(did you mean 'iterations'\\?\\)"),
        ("iterations: three\n", "iterations: expected int, got str 'three'"),
        ("iterations: 0\n", "iterations must be >= 1, got 0"),
        ("llm_context: 0\n", "llm_context must be >= 1, got 0"),
        ("learning_rate: -1\n", "learning_rate must be > 0"),
        ("prior_weight: .nan\n", "prior_weight"),
        ("iterations: [1\n", "not valid YAML"),
        ("- 1\n- 2\n", "expected a mapping"),
    ],
)
def test_bad_configs_are_refused_naming_the_setting(tmp_path, text, match):
    with pytest.raises(ConfigError, match=match):
        load_config(ExampleConfig, _config(tmp_path, text))


def test_a_huge_value_makes_a_short_message(tmp_path):
    path = _config(tmp_path, f"iterations: {list(range(20_000))}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(ExampleConfig, path)
    assert str(caught.value) == f"{path}: iterations: expected int, got list [0, 1, 2, 3, 4, 5, ...]"


def test_method_run_refuses_an_alias_bomb_config_in_bounded_memory_and_time(tmp_path):
    config = _config(tmp_path, alias_bomb("iterations"))
    out = tmp_path / "run"
    result = run_bounded("textagents.cli", "method", "run", "example", str(config), "--out", str(out))
    assert result.stderr == f"error: {config}: refusing YAML whose aliases expand it past 2,097,152 characters\n"
    assert result.returncode == 2 and not out.exists()


def test_command_line_settings_refuse_alias_bombs_and_endless_values():
    with pytest.raises(YAMLInputError, match=r"^--set 'iterations': refusing YAML whose aliases expand"):
        parse_setting("iterations=" + alias_bomb("x"))
    with pytest.raises(YAMLInputError, match=r"^--vary 'iterations': refusing YAML with an alias inside the value"):
        parse_vary("iterations=1,&a [*a]")


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(ExampleConfig, tmp_path / "nope.yaml")


def test_a_smoke_run_writes_the_whole_run_directory(tmp_path):
    out = tmp_path / "run"
    assert main(["method", "run", "example", str(SMOKE), "--out", str(out), "--no-progress"]) == 0
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["method"] == "example" and recorded["config"]["iterations"] == 4
    assert recorded["versions"]["textagents"] and "machine" in recorded
    metrics = _metrics(out)
    assert [(r["kind"], r["iteration"]) for r in metrics] == [
        ("train", 1),
        ("train", 2),
        ("eval", 2),
        ("train", 3),
        ("train", 4),
        ("eval", 4),
    ]
    assert [p.name for p in sorted((out / "checkpoints").iterdir())] == ["iter_000003", "iter_000004"]
    assert (out / "curves.png").stat().st_size > 1000 and any((out / "tensorboard").iterdir())
    report = (out / "report.md").read_text()
    assert "# example" in report and "## Last evaluation (iteration 4)" in report and "curves.png" in report


def test_an_existing_run_is_never_overwritten_and_resume_needs_something_to_resume(tmp_path, capsys):
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    assert main(["method", "run", "example", str(SMOKE), "--out", str(out), "--no-progress"]) == 2
    assert "is not empty: pass --resume" in capsys.readouterr().err
    with pytest.raises(RunDirError, match="holds no run"):
        run_method("example", SMOKE, tmp_path / "empty", resume=True, progress=False)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    assert main(["method", "run", "example", str(SMOKE), "--out", str(tmp_path / "foreign"), "--no-progress"]) == 2
    assert [p.name for p in (tmp_path / "foreign").iterdir()] == ["notes.txt"]  # a refused run removes nothing


def test_resume_starts_again_from_zero_a_run_killed_before_its_first_checkpoint(tmp_path):
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    for started in (tmp_path / "started", tmp_path / "cmp" / "learning_rate=0.5_seed0"):
        started.mkdir(parents=True)
        (started / "config.json").write_text((out / "config.json").read_text())  # what a kill -9 leaves
        (started / "metrics.jsonl").write_text((out / "metrics.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.warns(RunDirWarning, match="no checkpoint yet .* starts again from iteration 0"):
        run_method("example", SMOKE, tmp_path / "started", resume=True, progress=False)
    assert _metrics(tmp_path / "started") == _metrics(out)
    command = [
        "method",
        "compare",
        "example",
        str(SMOKE),
        "--out",
        str(tmp_path / "cmp"),
        "--vary",
        "learning_rate=0.5",
    ]
    with pytest.warns(RunDirWarning, match="no checkpoint yet"):
        assert main([*command, "--no-progress"]) == 0
    assert _metrics(tmp_path / "cmp" / "learning_rate=0.5_seed0") == _metrics(out)


def test_resuming_with_another_config_names_the_changed_settings(tmp_path):
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    changed = _config(tmp_path, SMOKE.read_text().replace("learning_rate", "x") + "learning_rate: 0.1\n")
    with pytest.raises(RunDirError, match=r"another config \(learning_rate: 0.5 -> 0.1\)"):
        run_method("example", changed, out, resume=True, progress=False)


def test_a_finished_run_is_extended_by_more_iterations_and_never_shortened(tmp_path):
    out, straight = tmp_path / "run", tmp_path / "straight"
    longer = _config(tmp_path, SMOKE.read_text().replace("iterations: 4", "iterations: 6"))
    run_method("example", SMOKE, out, progress=False)
    run_method("example", longer, out, resume=True, progress=False)
    run_method("example", longer, straight, progress=False)
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["config"]["iterations"] == 6
    assert [{k: e[k] for k in ("from", "to", "at_iteration")} for e in recorded["extended"]] == [
        {"from": 4, "to": 6, "at_iteration": 4}
    ]
    train = [r for r in _metrics(out) if r["kind"] == "train"]
    assert train == [r for r in _metrics(straight) if r["kind"] == "train"]  # as if it had been 6 from the start
    assert [r["iteration"] for r in _metrics(out) if r["kind"] == "eval"] == [2, 4, 6]
    shorter = _config(tmp_path, SMOKE.read_text().replace("iterations: 4", "iterations: 5"), "shorter.yaml")
    with pytest.raises(RunDirError, match=r"has reached iteration 6: iterations=5 would shorten it"):
        run_method("example", shorter, out, resume=True, progress=False)


def test_compare_extends_finished_runs_when_iterations_grow(tmp_path):
    longer = _config(tmp_path, SMOKE.read_text().replace("iterations: 4", "iterations: 5"))
    command = ["method", "compare", "example", "--out", str(tmp_path / "cmp"), "--vary", "learning_rate=0.5"]
    assert main([*command[:3], str(SMOKE), *command[3:], "--no-progress"]) == 0
    assert main([*command[:3], str(longer), *command[3:], "--no-progress"]) == 0
    metrics = _metrics(tmp_path / "cmp" / "learning_rate=0.5_seed0")
    assert [r["iteration"] for r in metrics if r["kind"] == "train"] == [1, 2, 3, 4, 5]


def test_a_run_recorded_before_a_setting_existed_resumes_while_the_setting_keeps_its_default(tmp_path):
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    recorded = json.loads((out / "config.json").read_text())
    del recorded["config"]["llm_backend"]  # as a run from before the setting was added
    (out / "config.json").write_text(json.dumps(recorded))
    run_method("example", SMOKE, out, resume=True, progress=False)
    changed = _config(tmp_path, SMOKE.read_text() + "llm_backend: llamacpp\n")
    with pytest.raises(RunDirError, match=r"another config \(llm_backend: None -> 'llamacpp'\)"):
        run_method("example", changed, out, resume=True, progress=False)
    with pytest.raises(ConfigError, match="llm_backend must be one of"):
        load_config(ExampleConfig, _config(tmp_path, "llm_backend: vllm\n", "bad.yaml"))


LONG = """\
iterations: 60
checkpoint_every: 1
eval_every: 7
max_steps: 12
episodes_per_iteration: 6
eval_episodes: 3
"""


def test_a_run_killed_mid_way_resumes_to_the_same_metrics_as_an_uninterrupted_one(tmp_path):
    config = _config(tmp_path, LONG)
    reference = tmp_path / "reference"
    run_method("example", config, reference, progress=False)

    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "textagents.cli", "method", "run", "example", str(config), "--out", str(killed)]
    process = subprocess.Popen([*command, "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    metrics = killed / "metrics.jsonl"
    while time.monotonic() < deadline and process.poll() is None:
        if metrics.is_file() and metrics.read_text().count('"train"') >= 12:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    logged = metrics.read_text().count('"train"')
    assert 12 <= logged < 60

    assert main(["method", "run", "example", str(config), "--out", str(killed), "--resume", "--no-progress"]) == 0
    assert _metrics(killed) == _metrics(reference)  # nothing lost, nothing counted twice, same numbers
    report = (killed / "report.md").read_text()
    assert report.split("## Config")[1] == (reference / "report.md").read_text().split("## Config")[1]


def test_eval_evaluates_a_checkpoint_and_appends_the_result(tmp_path, capsys):
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    assert main(["method", "eval", "example", str(out)]) == 0
    last = json.loads(capsys.readouterr().out)
    assert last["iteration"] == 4 and last["success"] == _metrics(out)[-1]["success"]
    third = evaluate_run("example", out, checkpoint=3)
    assert third["iteration"] == 3
    untrained = evaluate_run("example", out, checkpoint=0)  # the method as its config builds it
    fresh = ExampleMethod(load_config(ExampleConfig, SMOKE), RunContext(tmp_path / "fresh", llm=lambda: None))
    assert untrained["iteration"] == 0 and {k: untrained[k] for k in ("return", "success")} == fresh.evaluate()
    assert [json.loads(line)["iteration"] for line in (out / "evals.jsonl").read_text().splitlines()] == [4, 3, 0]
    with pytest.raises(RunDirError, match="no checkpoint of iteration 1; it has: 3, 4"):
        evaluate_run("example", out, checkpoint=1)
    assert main(["method", "eval", "example", str(out), "--set", "eval_episodes=3"]) == 0
    changed = json.loads(capsys.readouterr().out)
    assert changed["settings"] == {"eval_episodes": 3}
    assert main(["method", "eval", "example", str(out), "--set", "eval_episodes=zero"]) == 2  # checked as a config
    assert main(["method", "eval", "example", str(out), "--set", "eval_episodes"]) == 2


def test_llm_calls_are_recorded_in_the_run_and_replay_without_a_model(tmp_path, tiny_models):
    config = _config(tmp_path, SMOKE.read_text().replace("prior_weight: 0.0", "prior_weight: 1.0"))
    recorded = tmp_path / "recorded"
    run_method("example", config, recorded, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    calls = recorded / "llm_calls.jsonl"
    lines = calls.read_text().splitlines()
    assert lines and all(json.loads(line)["kind"] == "score" for line in lines)
    replayed = tmp_path / "replayed"
    run_method("example", config, replayed, llm=LLMChoice(replay=str(calls)), progress=False)
    assert _metrics(replayed) == _metrics(recorded)
    with pytest.raises(RunDirError, match="names none: set `model:` or pass --model"):
        run_method("example", config, tmp_path / "no-model", progress=False)


def test_a_llamacpp_model_gets_the_configs_context(tmp_path, monkeypatch):
    from textagents.llm import llamacpp_backend

    contexts = []

    class Opened(Exception):
        pass

    def backend(model, *, n_ctx):
        contexts.append((model, n_ctx))
        raise Opened

    monkeypatch.setattr(llamacpp_backend, "LlamaCppBackend", backend)
    llm = "prior_weight: 1.0\nmodel: some-model\nllm_backend: llamacpp\n"
    for extra, context in [("", 4096), ("llm_context: 8192\n", 8192)]:
        config = _config(tmp_path, SMOKE.read_text() + llm + extra)
        with pytest.warns(RunDirWarning), pytest.raises(Opened):
            run_method("example", config, tmp_path / f"run{context}", progress=False)
        assert contexts.pop() == ("some-model", context)


def test_method_list_names_every_method_and_its_configs(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["method", "list"]) == 0
    out = capsys.readouterr().out
    assert "example: template method" in out and "benchmarks/methods/example/smoke.yaml" in out
    assert "lgqd: language-grounded QD" in out and "textagents lgqd <stage>" in out
    assert "benchmarks/methods/lgqd/smoke.yaml" in out


def test_an_unknown_method_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown method 'glamm'.*valid: example"):
        run_method("glamm", SMOKE, "/nonexistent", progress=False)
    assert main(["method", "run", "glamm", str(SMOKE), "--out", "/nonexistent"]) == 2


def test_the_report_is_written_again_from_the_metrics(tmp_path, capsys):
    out = tmp_path / "run"
    run_method("example", SMOKE, out, progress=False)
    first = (out / "report.md").read_text()
    (out / "report.md").unlink()
    assert main(["method", "report", "example", str(out)]) == 0
    assert (out / "report.md").read_text() == first
    assert main(["method", "report", "llm_personalize", str(out)]) == 2  # an example run
    assert "is a 'example' run" in capsys.readouterr().err


def test_compare_set_changes_the_config_of_every_run(tmp_path):
    out = tmp_path / "cmp"
    command = ["method", "compare", "example", str(SMOKE), "--out", str(out), "--vary", "learning_rate=0.5,0.25"]
    assert main([*command, "--set", "iterations=2", "--set", "eval_every=1", "--no-progress"]) == 0
    for value in ("0.5", "0.25"):
        recorded = json.loads((out / f"learning_rate={value}_seed0" / "config.json").read_text())["config"]
        assert (recorded["iterations"], recorded["eval_every"], recorded["learning_rate"]) == (2, 1, float(value))
    assert main([*command, "--set", "iterations"]) == 2


def test_compare_names_runs_of_values_that_are_paths(tmp_path, capsys):
    out = tmp_path / "cmp"
    command = ["method", "compare", "example", str(SMOKE), "--out", str(out), "--set", "iterations=1", "--no-progress"]
    assert main([*command, "--vary", "model=models/a,models/b"]) == 0  # the example's LLM is off: never loaded
    assert sorted(p.name for p in out.glob("model=*")) == ["model=models_a_seed0", "model=models_b_seed0"]
    assert "| models/a |" in (out / "comparison.md").read_text()
    assert main([*command, "--vary", "model=models/a,models:a"]) == 2
    assert "characters a folder name cannot hold" in capsys.readouterr().err


@pytest.mark.parametrize(("options", "threads"), [([], 1), (["--threads", "2"], 2)])
def test_run_and_compare_train_on_one_torch_thread_unless_told(tmp_path, monkeypatch, options, threads):
    import torch

    from textagents.methods.core import compare, runner

    seen = []
    monkeypatch.setattr(runner, "run_method", lambda *a, **k: seen.append(torch.get_num_threads()) or {})
    monkeypatch.setattr(compare, "write_comparison", lambda *a: tmp_path / "comparison.md")
    torch.set_num_threads(3)
    try:
        assert main(["method", "run", "example", str(SMOKE), "--out", str(tmp_path / "run"), *options]) == 0
        compared = ["method", "compare", "example", str(SMOKE), "--out", str(tmp_path / "cmp"), "--vary", "seed=0"]
        assert main([*compared, *options]) == 0
        assert seen == [threads, threads] and torch.get_num_threads() == 3  # restored afterwards
        assert main(["method", "run", "example", str(SMOKE), "--out", str(tmp_path / "run"), "--threads", "0"]) == 2
    finally:
        torch.set_num_threads(1)


def _failing_in_iteration_one(monkeypatch, error: type[BaseException] = RuntimeError) -> None:
    """The example method, failing at the end of its first training iteration (after its LLM calls)."""
    from textagents.methods.example.method import ExampleMethod

    trains = ExampleMethod.train_iteration

    def train_iteration(self, iteration: int) -> dict:
        trains(self, iteration)
        raise error("boom")

    monkeypatch.setattr(ExampleMethod, "train_iteration", train_iteration)


@pytest.mark.parametrize("recording", [None, "llm_calls.jsonl", "mine.jsonl"])
def test_a_run_failing_before_its_first_checkpoint_can_be_run_again_with_the_same_command(
    tmp_path, monkeypatch, capsys, recording
):
    llm = "prior_weight: 1.0\nmodel: tiny-causal-lm\n" if recording else ""
    config = _config(tmp_path, SMOKE.read_text() + llm)
    monkeypatch.chdir(tmp_path)  # a relative --out, an absolute --llm-record inside it
    command = ["method", "run", "example", str(config), "--out", "run", "--no-progress"]
    if recording == "mine.jsonl":
        command += ["--llm-record", "run/mine.jsonl"]
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        _failing_in_iteration_one(patch)
        with pytest.warns(RunDirWarning, match="stopped before its first checkpoint; what it wrote is removed"):
            assert main(command) == 1
    assert "boom" in capsys.readouterr().err
    if recording:  # the calls it paid for are kept, where they block nothing
        assert [p.name for p in out.iterdir()] == ["failed_starts"]
        (kept,) = (out / "failed_starts").iterdir()
        assert kept.name.startswith("llm_calls-") and kept.read_text().count("\n") > 0
    else:
        assert not out.exists()
    assert main(command) == 0
    assert [r["iteration"] for r in _metrics(out) if r["kind"] == "train"] == [1, 2, 3, 4]


def test_a_failed_start_in_a_folder_that_existed_keeps_the_folder_and_what_was_there(tmp_path, monkeypatch):
    out = tmp_path / "run"
    (out / "failed_starts").mkdir(parents=True)
    (out / "failed_starts" / "llm_calls-earlier.jsonl").write_text("paid for\n")
    command = ["method", "run", "example", str(SMOKE), "--out", str(out), "--no-progress"]
    with monkeypatch.context() as patch:
        _failing_in_iteration_one(patch)
        with pytest.warns(RunDirWarning):
            assert main(command) == 1
    assert [str(p.relative_to(out)) for p in sorted(out.rglob("*"))] == [
        "failed_starts",
        "failed_starts/llm_calls-earlier.jsonl",
    ]
    assert (out / "failed_starts" / "llm_calls-earlier.jsonl").read_text() == "paid for\n"
    assert main(command) == 0 and (out / "report.md").is_file()


def test_ctrl_c_before_the_first_checkpoint_says_to_run_the_same_command_again(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    _failing_in_iteration_one(monkeypatch, KeyboardInterrupt)
    with pytest.warns(RunDirWarning, match="stopped before its first checkpoint"):
        assert main(["method", "run", "example", str(SMOKE), "--out", str(out), "--no-progress"]) == 130
    assert "interrupted before the first checkpoint: run the same command again" in capsys.readouterr().err
    assert not out.exists()
