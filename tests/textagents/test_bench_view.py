"""``textagents bench view``: a run's trajectories as a static site, every episode replayed for its frames."""

from __future__ import annotations

import json
import shutil
from html import escape

import imageio.v3 as iio
import pytest

from tests.textagents.bench_fixtures import SMALL_SUITE, write_suite
from textagents.bench import load_suite, run_suite, write_report
from textagents.bench.store import read_episodes, trajectory_path
from textagents.bench.view import write_view
from textagents.cli import main
from textenvs.viewer import frame_indices

EPISODES = 2 * (2 + 3)


@pytest.fixture(scope="module")
def played(tmp_path_factory, data_dir):
    """The small suite (BabyAI-Text and fastsim, random and expert) with two BabyAI seeds and trajectories."""
    directory = tmp_path_factory.mktemp("view")
    suite = load_suite(write_suite(directory, SMALL_SUITE.replace("count: 8", "count: 2")))
    run_suite(suite, directory / "run", trajectories=True, progress=False)
    return directory / "run"


@pytest.fixture
def run(played, tmp_path):
    return shutil.copytree(played, tmp_path / "run")


def _page(run_dir, record) -> str:
    return (run_dir / "view" / "episodes" / record["agent"] / record["env"] / f"{record['seed']}.html").read_text()


def _action_text(action) -> str:
    return escape(action if isinstance(action, str) else json.dumps(action))


def test_every_episode_gets_a_page_with_its_steps_and_replayed_frames(run):
    result = write_view(run, max_frames=5, videos=["gif"], progress=False)
    assert result.episodes == EPISODES and result.without_frames == []
    index = result.index.read_text()
    assert index.count("<tr data-agent=") == EPISODES and '<select id="f-success">' in index
    for record in read_episodes(run):
        page = _page(run, record)
        trajectory = json.loads(trajectory_path(run, record["agent"], record["env"], record["seed"]).read_text())
        for step in trajectory["steps"]:
            assert f"<pre>{_action_text(step['action'])}</pre>" in page
        assert ('badge ok">success' in page) is record["success"]
        kept = frame_indices(record["steps"] + 1, 5)
        frames = run / "view" / "frames" / record["agent"] / record["env"] / str(record["seed"])
        assert sorted(p.name for p in frames.iterdir()) == [f"{i:05d}.png" for i in kept]
        gif = run / "view" / "videos" / record["agent"] / record["env"] / f"{record['seed']}.gif"
        assert 1 <= iio.imread(gif, index=None).shape[0] <= len(kept)


def test_trajectories_recorded_before_the_header_and_flags_are_still_shown(run):
    record = next(r for r in read_episodes(run) if r["agent"] == "random" and r["env"].startswith("BabyAI"))
    path = trajectory_path(run, record["agent"], record["env"], record["seed"])
    steps = json.loads(path.read_text())["steps"]
    path.write_text(json.dumps([{k: s[k] for k in ("observation", "action", "reward", "feedback")} for s in steps]))
    result = write_view(run, max_frames=2, progress=False)
    assert result.without_frames == []
    page = _page(run, record)
    assert page.count('<img class="frame"') == 2 and "not recorded" not in page  # the replay gave the flags


def test_an_episode_that_does_not_replay_is_shown_from_its_recording_with_a_note(run):
    record = next(r for r in read_episodes(run) if r["agent"] == "expert" and r["env"].startswith("BabyAI"))
    path = trajectory_path(run, record["agent"], record["env"], record["seed"])
    trajectory = json.loads(path.read_text())
    trajectory["steps"][0]["reward"] = 0.25
    path.write_text(json.dumps(trajectory))
    result = write_view(run, max_frames=2, progress=False)
    assert len(result.without_frames) == 1 and f"seed {record['seed']}" in result.without_frames[0]
    page = _page(run, record)
    assert "the replay did not reproduce the recording" in page and "at step 0 the reward was" in page
    assert "<img" not in page and f"<pre>{_action_text(trajectory['steps'][0]['action'])}</pre>" in page


def test_the_leaderboard_links_the_viewer_once_it_is_written(run):
    write_report(run, plots=False)
    assert "`textagents bench view RUN_DIR` writes view/index.html" in (run / "leaderboard.md").read_text()
    write_view(run, max_frames=0, progress=False)
    write_report(run, plots=False)
    assert "[view/index.html](view/index.html)" in (run / "leaderboard.md").read_text()
    shutil.rmtree(run / "view")
    shutil.rmtree(run / "trajectories")
    write_report(run, plots=False)
    assert "play the suite with `--trajectories`" in (run / "leaderboard.md").read_text()


def test_cli_view_writes_the_site_and_refuses_a_run_without_trajectories(run, capsys):
    assert main(["bench", "view", str(run), "--max-frames", "1", "--no-progress", "--out", str(run / "site")]) == 0
    assert f"{EPISODES} episodes (0 without frames): open {run / 'site' / 'index.html'}" in capsys.readouterr().out
    shutil.rmtree(run / "trajectories")
    assert main(["bench", "view", str(run), "--no-progress"]) == 2
    assert "--trajectories" in capsys.readouterr().err
