"""The runner: a run killed half-way and resumed reports exactly what an uninterrupted run does; workers
and backends give the same episodes; the report's numbers are the episodes' statistics."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal

import pytest

from tests.textagents.bench_fixtures import (
    SMALL_SUITE,
    SMALL_SUITE_EPISODES,
    copy_timings,
    episodes_without_timing,
    report_files,
    write_suite,
)
from textagents.bench import load_suite, run_suite, write_report
from textagents.bench.store import EpisodeLog
from textagents.cli import main

KILL_AFTER = 9
BABYAI = "BabyAI-Text-GoToLocal-v0"


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, data_dir):
    """The small suite played without interruption by one worker, and its report."""
    directory = tmp_path_factory.mktemp("reference")
    suite = load_suite(write_suite(directory))
    result = run_suite(suite, directory / "run", progress=False)
    assert result == {"episodes": SMALL_SUITE_EPISODES, "played_now": SMALL_SUITE_EPISODES, "resumed_from": 0}
    write_report(directory / "run")
    return directory / "run"


def _run_and_kill_itself(suite_path: str, out: str, workers: int) -> None:
    def kill_after_some(record: dict) -> None:
        kill_after_some.count += 1
        if kill_after_some.count == KILL_AFTER:
            os.kill(os.getpid(), signal.SIGKILL)

    kill_after_some.count = 0
    run_suite(load_suite(suite_path), out, workers=workers, progress=False, on_episode=kill_after_some)


@pytest.mark.parametrize("workers", [1, 2])
def test_killed_then_resumed_run_reports_what_an_uninterrupted_run_does(tmp_path, reference_run, workers):
    suite_path = write_suite(tmp_path)
    out = tmp_path / "run"
    child = multiprocessing.get_context("spawn").Process(
        target=_run_and_kill_itself, args=(str(suite_path), str(out), workers)
    )
    child.start()
    child.join(timeout=300)
    assert child.exitcode == -signal.SIGKILL
    recorded = (out / "episodes.jsonl").read_bytes()
    assert recorded.count(b"\n") == KILL_AFTER
    # A kill in the middle of a write leaves a cut line: it must be dropped, not parsed or counted.
    with open(out / "episodes.jsonl", "ab") as f:
        f.write(b'{"agent": "random", "env": "BabyAI-Text-GoTo')
    write_report(out, plots=False)
    assert f"partial: {KILL_AFTER} of {SMALL_SUITE_EPISODES} episodes" in (out / "leaderboard.md").read_text()

    result = run_suite(load_suite(suite_path), out, workers=workers, progress=False)
    assert result == {
        "episodes": SMALL_SUITE_EPISODES,
        "played_now": SMALL_SUITE_EPISODES - KILL_AFTER,
        "resumed_from": KILL_AFTER,
    }
    assert episodes_without_timing(out) == episodes_without_timing(reference_run)
    copy_timings(reference_run, out)
    write_report(out)
    assert report_files(out) == report_files(reference_run)
    run = json.loads((out / "run.json").read_text())
    assert len(run["sessions"]) == 2 and run["finished"] is True


def test_rerunning_a_finished_run_plays_nothing(tmp_path, reference_run):
    suite_path = write_suite(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    for name in ("episodes.jsonl", "run.json"):
        (out / name).write_bytes((reference_run / name).read_bytes())
    result = run_suite(load_suite(suite_path), out, progress=False)
    assert result["played_now"] == 0 and result["resumed_from"] == SMALL_SUITE_EPISODES


def test_resuming_with_an_edited_suite_is_refused(tmp_path, reference_run):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_bytes((reference_run / "run.json").read_bytes())
    edited = write_suite(tmp_path, SMALL_SUITE.replace("count: 8", "count: 9"))
    with pytest.raises(ValueError, match="holds a run of another suite"):
        run_suite(load_suite(edited), out, progress=False)


def test_a_folder_holding_something_else_is_refused_and_left_as_it_was(tmp_path, capsys):
    method_run = tmp_path / "method-run"
    method_run.mkdir()
    (method_run / "config.json").write_text('{"method": "example", "config": {}}')
    (method_run / "metrics.jsonl").write_text("")
    assert main(["bench", "run", str(write_suite(tmp_path)), "--out", str(method_run), "--no-progress"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"error: {method_run} is not empty and holds no bench run")
    assert "config.json, metrics.jsonl" in error and "choose a new or empty --out" in error
    assert sorted(p.name for p in method_run.iterdir()) == ["config.json", "metrics.jsonl"]


def test_the_cli_resumes_a_run_of_the_same_suite_in_its_folder(tmp_path, reference_run, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_bytes((reference_run / "run.json").read_bytes())
    episodes = (reference_run / "episodes.jsonl").read_text().splitlines(keepends=True)
    (out / "episodes.jsonl").write_text("".join(episodes[:5]))
    assert main(["bench", "run", str(write_suite(tmp_path)), "--out", str(out), "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result == {"episodes": SMALL_SUITE_EPISODES, "played_now": SMALL_SUITE_EPISODES - 5, "resumed_from": 5}


def test_two_workers_play_the_same_episodes_as_one(tmp_path, reference_run):
    out = tmp_path / "run"
    run_suite(load_suite(write_suite(tmp_path)), out, workers=2, progress=False)
    assert episodes_without_timing(out) == episodes_without_timing(reference_run)


def test_episode_log_refuses_a_second_record_of_an_episode(tmp_path):
    record = {"agent": "a", "env": "e", "seed": 1, "return": 0.0}
    with EpisodeLog(tmp_path / "episodes.jsonl") as log:
        log.append(record)
        with pytest.raises(ValueError, match="already recorded"):
            log.append(dict(record))
    with EpisodeLog(tmp_path / "episodes.jsonl") as log:
        assert len(log) == 1 and ("a", "e", 1) in log


def test_report_statistics_are_the_episodes_mean_and_standard_error(reference_run):
    summary = json.loads((reference_run / "summary.json").read_text())
    records = episodes_without_timing(reference_run)
    returns = [r["return"] for k, r in records.items() if k[:2] == ("random", "BabyAI-Text-GoToLocal-v0")]
    assert len(returns) == 8
    mean = sum(returns) / 8
    stderr = math.sqrt(sum((x - mean) ** 2 for x in returns) / 7 / 8)
    cell = next(c for c in summary["cells"] if (c["agent"], c["env"]) == ("random", "BabyAI-Text-GoToLocal-v0"))
    assert cell["return"]["mean"] == pytest.approx(mean) and cell["return"]["stderr"] == pytest.approx(stderr)

    expert = next(a for a in summary["agents"] if a["agent"] == "expert")
    per_env = [c["progression"]["mean"] for c in summary["cells"] if c["agent"] == "expert"]
    assert expert["progression_average"] == pytest.approx(sum(per_env) / len(per_env))
    assert [a["rank"] for a in summary["agents"]] == [1, 2] and summary["agents"][0]["agent"] == "expert"
    assert summary["episodes"] == summary["expected_episodes"] == SMALL_SUITE_EPISODES

    csv_rows = (reference_run / "leaderboard.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + 4 and csv_rows[0].startswith("agent,kind,env,env_id,episodes,success_mean")
    markdown = (reference_run / "leaderboard.md").read_text()
    assert "| 1 | expert | expert | 2 | 11 |" in markdown and "(complete)" in markdown
    assert (reference_run / "leaderboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_json_records_what_reproduces_the_run(reference_run):
    run = json.loads((reference_run / "run.json").read_text())
    session = run["sessions"][0]
    assert session["packages"]["textenvs"] and session["packages"]["gymnasium"]
    assert session["machine"]["cpus"] >= 1 and session["backend"] == "local"
    assert [e["seeds"] for e in run["envs"]] == [list(range(8)), [3, 5, 7]]
    assert run["suite"]["sha256"] and run["finished"] is True


def test_cli_run_with_trajectories_then_report(tmp_path, data_dir, capsys):
    suite = write_suite(tmp_path, SMALL_SUITE.replace("count: 8", "count: 2"))
    out = tmp_path / "run"
    assert main(["bench", "run", str(suite), "--out", str(out), "--trajectories", "--no-progress"]) == 0
    trajectory = json.loads((out / "trajectories" / "expert" / "BabyAI-Text-GoToLocal-v0" / "1.json").read_text())
    assert (trajectory["env_id"], trajectory["seed"], trajectory["env_kwargs"]["max_steps"]) == (BABYAI, 1, 40)
    steps = trajectory["steps"]
    record = episodes_without_timing(out)[("expert", BABYAI, 1)]
    assert len(steps) == record["steps"] and "text" in steps[0]["observation"]
    assert steps[-1]["success"] is record["success"] is True and not any(s["invalid_action"] for s in steps)
    assert sum(s["reward"] for s in steps) == pytest.approx(record["return"])
    assert main(["bench", "report", str(out), "--no-plots"]) == 0
    assert "# Leaderboard: small" in capsys.readouterr().out


def test_a_failing_episode_stops_the_run_naming_it_and_keeps_the_finished_ones(tmp_path, data_dir, monkeypatch):
    from dataclasses import replace

    from textagents.bench import agents

    random_kind = agents.AGENT_KINDS["random"]

    def build(env, options, seed):
        if seed == 2:
            raise ValueError("the agent broke")
        return random_kind.build(env, options, seed)

    monkeypatch.setitem(agents.AGENT_KINDS, "random", replace(random_kind, build=build))
    suite = load_suite(write_suite(tmp_path))
    with pytest.raises(RuntimeError, match="agent 'random' on 'BabyAI-Text-GoToLocal-v0' with seed 2 failed: "):
        run_suite(suite, tmp_path / "run", progress=False)
    assert sorted(episodes_without_timing(tmp_path / "run")) == [
        ("random", "BabyAI-Text-GoToLocal-v0", 0),
        ("random", "BabyAI-Text-GoToLocal-v0", 1),
    ]


def test_invalid_and_parse_fallback_rates_are_per_step():
    from textagents.bench.report import step_rates

    records = [
        {"steps": 10, "invalid_actions": 1, "agent_stats": {"exact": 2, "fallback": 8}},
        {"steps": 30, "invalid_actions": 0, "agent_stats": {"exact": 28, "fallback": 2}},
    ]
    assert step_rates(records) == {"invalid_rate": 1 / 40, "parse_fallback_rate": 10 / 40}
    no_llm = [{"steps": 5, "invalid_actions": 0, "agent_stats": {}}]
    assert step_rates(no_llm) == {"invalid_rate": 0.0, "parse_fallback_rate": None}


def _synthetic_run(run_dir, episodes: dict[str, list[dict]]) -> None:
    """A run of one env (seeds 0-3) whose agents played the given episodes (progression, agent_stats, ...)."""
    run_dir.mkdir()
    agents = [{"name": name, "kind": "llm-generate", "envs": None, "options": {}} for name in episodes]
    run = {
        "suite": {"name": "synthetic", "sha256": "0" * 64, "description": ""},
        "envs": [{"name": "Corridor", "id": "TestCorridor-v0", "kwargs": {}, "seeds": [0, 1, 2, 3]}],
        "agents": agents,
        "sessions": [],
    }
    (run_dir / "run.json").write_text(json.dumps(run))
    lines = []
    for name, played in episodes.items():
        for seed, fields in enumerate(played):
            record = {"agent": name, "kind": "llm-generate", "env": "Corridor", "env_id": "TestCorridor-v0"}
            record |= {"seed": seed, "success": False, "return": 0.0, "progression": 0.0, "steps": 10}
            record |= {"invalid_actions": 0, "agent_stats": {}, "metrics": {}, "ended": True} | fields
            lines.append(json.dumps(record) + "\n")
    (run_dir / "episodes.jsonl").write_text("".join(lines))


def test_leaderboard_shows_an_agent_falling_back_on_every_step_at_100_percent(tmp_path):
    always = {"agent_stats": {"exact": 0, "fallback": 10}}
    half = {"agent_stats": {"exact": 5, "fallback": 5}, "invalid_actions": 1}
    _synthetic_run(tmp_path / "run", {"always-falls-back": [always] * 4, "half": [half] * 4})
    summary = json.loads(write_report(tmp_path / "run", plots=False)["summary"].read_text())
    rates = {a["agent"]: (a["invalid_rate"], a["parse_fallback_rate"]) for a in summary["agents"]}
    assert rates == {"always-falls-back": (0.0, 1.0), "half": (0.1, 0.5)}
    markdown = (tmp_path / "run" / "leaderboard.md").read_text()
    assert "| always-falls-back | llm-generate | 1 | 4 | 0.000 | 0.000 | 0.0% | 100.0% |" in markdown


def test_a_partial_agent_is_marked_and_not_ranked_against_complete_ones(tmp_path):
    lucky = [{"progression": 1.0, "success": True}]  # 1 of its 4 episodes, all successes so far
    _synthetic_run(tmp_path / "run", {"complete": [{"progression": 0.5}] * 4, "lucky": lucky})
    summary = json.loads(write_report(tmp_path / "run", plots=False)["summary"].read_text())
    assert [(a["agent"], a["rank"], a["partial"]) for a in summary["agents"]] == [
        ("complete", 1, False),
        ("lucky", None, True),
    ]
    markdown = (tmp_path / "run" / "leaderboard.md").read_text()
    assert "| — | lucky | llm-generate | 1 | 1 of 4 (partial) | 1.000 |" in markdown
