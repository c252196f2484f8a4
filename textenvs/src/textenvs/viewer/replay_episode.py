"""``textenvs replay``: one recorded episode played again in its env, written as a GIF/MP4 and an HTML page."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym

from textenvs.core.registration import unknown_id_error
from textenvs.viewer.html import EpisodeView
from textenvs.viewer.replay import replay
from textenvs.viewer.site import SiteWriter
from textenvs.viewer.trajectory import Step, Trajectory, load_trajectory
from textenvs.viewer.video import VIDEO_FORMATS, write_video

OUTPUT_FORMATS = ("html", *VIDEO_FORMATS)


def make_replay_env(trajectory: Trajectory) -> gym.Env:
    """The trajectory's env (``gym.make`` with its recorded kwargs), rendering ``rgb_array`` frames."""
    import textenvs  # noqa: F401  (registers the ids)

    if trajectory.env_id is None:
        raise ValueError("the trajectory names no env (a recording without a header): give its env id and seed")
    if trajectory.env_id not in gym.registry:
        raise unknown_id_error(trajectory.env_id, gym.registry)
    return gym.make(trajectory.env_id, **{**trajectory.env_kwargs, "render_mode": "rgb_array"})


def replay_episode(
    trajectory: Trajectory,
    out: str | Path,
    formats: Sequence[str] = ("gif", "html"),
    *,
    max_frames: int | None = 200,
    fps: float = 4.0,
) -> dict[str, Path]:
    """Replay ``trajectory`` (checking that it reproduces what it recorded: ``ReplayMismatchError``
    otherwise) and write ``formats`` into the folder ``out``; return the written paths by format."""
    unknown = sorted(set(formats) - set(OUTPUT_FORMATS))
    if unknown or not formats:
        raise ValueError(f"unknown output format(s) {unknown or formats}; valid: {', '.join(OUTPUT_FORMATS)}")
    env = make_replay_env(trajectory)
    try:
        played = replay(env, trajectory.seed, trajectory.actions, recorded=trajectory.steps, max_frames=max_frames)
    finally:
        env.close()
    agent = trajectory.agent or "replay"
    view = EpisodeView(
        agent=agent,
        env=str(trajectory.env_id),
        seed=trajectory.seed,
        steps=played.steps,
        final_observation=played.final_observation,
        details={"env id": trajectory.env_id, "ended by the env": played.ended},
        frames=played.frames,
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    videos = [f for f in formats if f in VIDEO_FORMATS]
    if "html" in formats:
        site = SiteWriter(out, videos=videos, fps=fps)
        written = site.add(view)
        return written | {"html": site.finish(f"Replay of {agent} on {trajectory.env_id}")}
    stem = f"{trajectory.env_id}_seed{trajectory.seed}"
    frames = [played.frames[s] for s in sorted(played.frames)]
    return {f: write_video(out / f"{stem}.{f}", frames, fps) for f in videos}


def trajectory_from_args(
    path: str | Path | None, env_id: str | None, seed: int | None, actions: Sequence[str] | None
) -> Trajectory:
    """The episode the command line names: a trajectory file (its env id and seed replaced by those given),
    or an env id, a seed and actions (commands as typed; a JSON array such as ``[4, 4]`` is a continuous
    action)."""
    if path is not None:
        if actions:
            raise ValueError("give a trajectory file or --action values, not both")
        trajectory = load_trajectory(path)
        trajectory.env_id = env_id or trajectory.env_id
        trajectory.seed = trajectory.seed if seed is None else seed
        if trajectory.env_id is None or trajectory.seed is None:
            raise ValueError(f"{path} holds no header (an older recording): give --env-id and --seed")
        return trajectory
    if env_id is None:
        raise ValueError("give a trajectory file, or --env-id (with --seed and --action values)")
    return Trajectory(env_id=env_id, seed=seed, steps=[Step(None, _parse_action(a)) for a in actions or ()])


def _parse_action(text: str) -> object:
    if not text.lstrip().startswith("["):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"action {text!r} is not a JSON array of numbers ({error})") from error
