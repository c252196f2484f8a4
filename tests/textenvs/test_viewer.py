"""The trajectory viewer: trajectory files, replay, GIF/MP4 export, the HTML site and ``textenvs replay``."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest

from textenvs.cli import main
from textenvs.viewer import (
    EpisodeView,
    ReplayMismatchError,
    SiteWriter,
    Step,
    Trajectory,
    frame_indices,
    load_trajectory,
    parse_trajectory,
    replay,
    write_gif,
)
from textenvs.viewer import video as video_module
from textenvs.viewer.replay_episode import replay_episode

from .corridor_env import CORRIDOR_ID

#: From seed 1 (cell 1): to cell 0, bump into the wall, an invalid command, then right to the door (cell 4).
ACTIONS = ["go left", "go left", "dance", "go right", "go right", "go right", "go right"]


def _corridor(**kwargs) -> gym.Env:
    return gym.make(CORRIDOR_ID, render_mode="rgb_array", **kwargs)


def _recorded(seed: int = 1, actions: list = ACTIONS) -> Trajectory:
    """A trajectory recorded by playing ``actions`` in the corridor."""
    played = replay(_corridor(), seed, actions)
    return Trajectory(CORRIDOR_ID, seed, played.steps, agent="scripted", kind="test")


def test_replay_reproduces_the_recorded_rewards_flags_and_observations():
    trajectory = _recorded()
    steps = trajectory.steps
    assert [s.reward for s in steps][-1] == 1.0 and sum(s.reward for s in steps) == 1.0
    assert len(steps) == len(ACTIONS) and steps[1].feedback == "You bump into the wall."
    assert [s.invalid_action for s in steps] == [False, False, True, False, False, False, False]
    assert steps[-1].success and not any(s.success for s in steps[:-1])
    again = replay(_corridor(), trajectory.seed, trajectory.actions, recorded=steps, max_frames=None)
    assert again.steps == steps and again.ended
    assert sorted(again.frames) == list(range(len(steps) + 1))
    assert again.frames[0].shape == (8, 40, 3) and not np.array_equal(again.frames[0], again.frames[len(steps)])


@pytest.mark.parametrize(
    ("field", "value"),
    [("reward", 0.5), ("invalid_action", False), ("feedback", "other"), ("observation", {"text": "elsewhere"})],
)
def test_replay_names_the_first_step_that_does_not_reproduce(field, value):
    trajectory = _recorded()
    setattr(trajectory.steps[2], field, value)
    with pytest.raises(ReplayMismatchError, match=rf"at step 2 the {field} was"):
        replay(_corridor(), trajectory.seed, trajectory.actions, recorded=trajectory.steps)


def test_replay_with_another_seed_or_actions_fails_clearly():
    trajectory = _recorded(seed=1)
    with pytest.raises(ReplayMismatchError, match="do not reproduce"):
        replay(_corridor(), 2, trajectory.actions, recorded=trajectory.steps)
    actions = trajectory.actions
    actions[3] = "wait"  # the same answer at step 3, but every later observation is one cell behind
    with pytest.raises(ReplayMismatchError, match="at step 4 the observation"):
        replay(_corridor(), trajectory.seed, actions, recorded=trajectory.steps)
    with pytest.raises(ReplayMismatchError, match="ended after step"):
        replay(_corridor(), trajectory.seed, [*trajectory.actions, "go right"])


def test_old_recordings_without_flags_replay_and_gain_them():
    trajectory = _recorded()
    old = [{k: v for k, v in vars(s).items() if k not in ("invalid_action", "success")} for s in trajectory.steps]
    parsed = parse_trajectory(json.loads(json.dumps(old)))
    assert parsed.env_id is None and parsed.steps[2].invalid_action is None
    played = replay(_corridor(), trajectory.seed, parsed.actions, recorded=parsed.steps)
    assert played.steps[2].invalid_action is True


def test_trajectory_files_round_trip_and_bad_ones_are_refused(tmp_path):
    trajectory = _recorded()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trajectory.to_json()))
    assert load_trajectory(path) == trajectory
    path.write_text(json.dumps({"format": "other/9", "steps": []}))
    with pytest.raises(ValueError, match="format 'other/9'"):
        load_trajectory(path)
    path.write_text(json.dumps([{"action": "wait", "bogus": 1}]))
    with pytest.raises(ValueError, match=r"unknown step key.*bogus"):
        load_trajectory(path)


@pytest.mark.parametrize(
    ("states", "cap", "expected"),
    [(5, None, [0, 1, 2, 3, 4]), (5, 9, [0, 1, 2, 3, 4]), (11, 3, [0, 5, 10]), (11, 1, [0]), (11, 0, [])],
)
def test_frame_caps_spread_frames_from_first_to_last(states, cap, expected):
    assert frame_indices(states, cap) == expected


def test_replay_keeps_at_most_max_frames():
    trajectory = _recorded()
    played = replay(_corridor(), trajectory.seed, trajectory.actions, max_frames=3)
    assert sorted(played.frames) == [0, 4, 7]
    assert replay(gym.make(CORRIDOR_ID), 1, ["wait"]).frames == {}  # an env that does not render


def test_gif_has_one_image_per_frame_enlarged_and_merges_repeats_keeping_the_duration(tmp_path):
    frames = [np.full((8, 40, 3), 40 * i, np.uint8) for i in range(5)]
    path = write_gif(tmp_path / "a.gif", frames, fps=4)
    images = iio.imread(path, index=None)
    assert images.shape == (5, 160, 800, 3)  # shorter side enlarged to 160 by a whole factor (20)
    assert [iio.immeta(path, index=i)["duration"] for i in range(5)] == [250] * 5
    path = write_gif(tmp_path / "b.gif", [frames[0], frames[0], frames[1]], fps=4)
    assert iio.imread(path, index=None).shape[0] == 2
    assert [iio.immeta(path, index=i)["duration"] for i in range(2)] == [500, 250]
    with pytest.raises(ValueError, match="different shapes"):
        write_gif(tmp_path / "c.gif", [frames[0], np.zeros((4, 4, 3), np.uint8)])


def test_mp4_needs_imageio_ffmpeg_and_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(video_module, "mp4_available", lambda: False)
    with pytest.raises(ImportError, match=r"textenvs\[video\]"):
        video_module.write_mp4(tmp_path / "a.mp4", [np.zeros((8, 8, 3), np.uint8)])


def test_mp4_has_every_frame(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    frames = [np.full((16, 16, 3), 50 * i, np.uint8) for i in range(4)]
    path = video_module.write_mp4(tmp_path / "a.mp4", frames, fps=4)
    assert sum(1 for _ in iio.imiter(path, plugin="FFMPEG")) == 4


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _views() -> list[EpisodeView]:
    steps = [
        Step({"mission": "reach the door", "text": HOSTILE}, "go left", 0.0, "You bump into the wall.", False, False),
        Step({"mission": "reach the door", "text": "cell 1"}, "dance", 0.0, "'dance' is not a valid command", True),
        Step({"mission": "reach the door", "text": "cell 1"}, "go right", 1.0, "", False, True),
    ]
    frame = np.zeros((8, 40, 3), np.uint8)
    return [
        EpisodeView("agent-a", "Env-1", 0, steps, frames={0: frame, 3: frame}),
        EpisodeView('evil"agent', "Env-2", 7, [Step("<b>bold</b>", [4.0, 4.0], 0.0)], success=False),
    ]


def test_site_pages_hold_every_step_escaped_with_filters(tmp_path):
    site = SiteWriter(tmp_path)
    written = [site.add(view) for view in _views()]
    index = site.finish("Episodes <of> a run").read_text()
    for key in ("f-agent", "f-env", "f-success"):
        assert f'<select id="{key}">' in index
    assert '<option value="evil&quot;agent">' in index and 'data-agent="evil&quot;agent"' in index
    assert index.count("<script>") == 1 and "Episodes &lt;of&gt; a run" in index
    assert 'data-success="1"' in index and 'data-success="0"' in index
    assert len(re.findall(r"<tr data-agent=", index)) == 2

    page = written[0]["html"].read_text()
    assert "<script" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count('class="badge bad">invalid<') == 1 and page.count('class="badge ok">success<') == 2
    assert "&#x27;dance&#x27; is not a valid command" in page and "You bump into the wall." in page
    action_rewards = re.findall(r"<td><pre>([^<]*)</pre></td><td class=num>([^<]*)</td>", page)
    assert action_rewards == [("go left", "0"), ("dance", "0"), ("go right", "1")]
    assert page.count("reach the door") == 1  # the unchanging mission is shown once, with the facts
    frames = sorted(p.name for p in (tmp_path / "frames" / "agent-a" / "Env-1" / "0").iterdir())
    assert frames == ["00000.png", "00003.png"] and page.count('<img class="frame"') == 2
    assert 'src="../../../frames/agent-a/Env-1/0/00000.png" width="800" height="160"' in page

    other = written[1]["html"].read_text()
    assert written[1]["html"].parent.name == "Env-2" and written[1]["html"].parent.parent.name == "evil_agent"
    assert "&lt;b&gt;bold&lt;/b&gt;" in other and "<pre>[4.0, 4.0]</pre>" in other


def test_site_writer_refuses_two_episodes_on_one_page_and_unknown_videos(tmp_path):
    site = SiteWriter(tmp_path)
    site.add(_views()[1])
    with pytest.raises(ValueError, match="share the page"):
        site.add(_views()[1])
    with pytest.raises(ValueError, match=r"unknown video format.*avi"):
        SiteWriter(tmp_path, videos=["avi"])


def test_replay_episode_writes_a_gif_of_the_capped_frames_and_the_page(tmp_path):
    written = replay_episode(_recorded(), tmp_path, ("gif", "html"), max_frames=4)
    assert iio.imread(written["gif"], index=None).shape[0] == 4
    assert written["html"].name == "index.html" and "scripted" in written["html"].read_text()


def _write(path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def test_cli_replays_a_trajectory_file(tmp_path, capsys):
    path = _write(tmp_path / "t.json", _recorded().to_json())
    assert main(["replay", path, "--out", str(tmp_path / "out"), "--format", "gif", "--max-frames", "-1"]) == 0
    out = capsys.readouterr().out
    assert "reproduced the recording" in out
    gif = next((tmp_path / "out").glob("*.gif"))
    assert iio.imread(gif, index=None).shape[0] == 6  # 8 states; the bump and the invalid command repeat one


def test_cli_refuses_a_trajectory_that_does_not_reproduce(tmp_path, capsys):
    data = _recorded().to_json()
    data["steps"][2]["reward"] = 3.0
    path = _write(tmp_path / "t.json", data)
    assert main(["replay", path, "--out", str(tmp_path / "out")]) == 2
    assert "at step 2 the reward was '3.0' when recorded and is '0.0' now" in capsys.readouterr().err


def test_cli_needs_env_and_seed_for_a_recording_without_header(tmp_path, capsys):
    path = _write(tmp_path / "t.json", [{"action": "go right"}])
    assert main(["replay", path, "--out", str(tmp_path / "out")]) == 2
    assert "give --env-id and --seed" in capsys.readouterr().err
    assert main(["replay", path, "--env-id", CORRIDOR_ID, "--seed", "1", "--out", str(tmp_path / "out")]) == 0


def test_cli_plays_actions_given_on_the_command_line(tmp_path, capsys):
    args = ["replay", "--env-id", CORRIDOR_ID, "--seed", "1", "--action", "go right", "--action", "<b>"]
    assert main([*args, "--out", str(tmp_path), "--format", "html"]) == 0
    page = next((tmp_path / "episodes").rglob("*.html")).read_text()
    assert "<pre>&lt;b&gt;</pre>" in page and 'class="badge bad">invalid<' in page


def test_a_text_command_for_a_continuous_env_says_which_wrapper_it_needs(data_dir):
    env = gym.make("Fastsim-Text-HardMaze-v0", render_mode="rgb_array")
    with pytest.raises(ValueError, match=r"step 0's action 'go forward' is not an action.*textagents bench view"):
        replay(env, 0, ["go forward"])
    assert replay(env, 0, [[4.0, 4.0]]).steps[0].action == [4.0, 4.0]
