"""``textagents bench view``: a run's trajectories as a static HTML site (``textenvs.viewer``).

Trajectories hold text; every episode is played again from its seed and recorded actions in the env its agent
played (made as the run made it, rendering ``rgb_array``), which gives its frames and checks that it
reproduces. An episode whose env cannot be made here, or whose replay differs, is shown from its recording
alone with a note saying why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from tqdm import tqdm

from textagents.bench.agents import AGENT_KINDS
from textagents.bench.store import RUN_FILE, TRAJECTORIES_DIR, read_episodes, trajectory_path
from textenvs.viewer import EpisodeView, SiteWriter, load_trajectory, replay

VIEW_DIR = "view"
INDEX = "index.html"
#: Frames kept per episode by default: a suite has hundreds of episodes.
MAX_FRAMES = 30


@dataclass
class ViewResult:
    """What ``write_view`` wrote: the index, the episodes shown, and those shown without frames (with why)."""

    index: Path
    episodes: int
    without_frames: list[str] = field(default_factory=list)


def viewer_note(run_dir: Path) -> str:
    """The leaderboard's line about ``run_dir``'s trajectory viewer: a link when it is written (``leaderboard.md``
    lies beside ``view/``), else how to write it."""
    site = f"{VIEW_DIR}/{INDEX}"
    if (run_dir / site).is_file():
        return f"Episodes step by step (observations, actions, rewards, flags, frames): [{site}]({site}).\n"
    if (run_dir / TRAJECTORIES_DIR).is_dir():
        how = f"`textagents bench view RUN_DIR` writes {site} from this run's trajectories"
    else:
        how = f"play the suite with `--trajectories`, then `textagents bench view RUN_DIR` writes {site}"
    return f"Episodes step by step: {how} (`textagents bench report` then links it here).\n"


class _Envs:
    """The env of one (agent, env) pair of the run at a time, made as the run made it, rendering frames."""

    def __init__(self, run: dict[str, Any]):
        self.agents = {a["name"]: a for a in run["agents"]}
        self.envs = {e["name"]: e for e in run["envs"]}
        self.key: tuple[str, str] | None = None
        self.env: gym.Env | None = None
        self.error = ""

    def get(self, agent: str, env: str) -> gym.Env | None:
        """The env, or None (``error`` says why)."""
        if (agent, env) != self.key:
            self.close()
            self.key = (agent, env)
            try:
                config, env_config = self.agents[agent], self.envs[env]
                kind = AGENT_KINDS[config["kind"]]
                kwargs = {**env_config["kwargs"], "render_mode": "rgb_array"}
                self.env = kind.make_env(env_config["id"], kwargs, kind.options(**config["options"]))
            except Exception as error:  # any failure only costs this pair its frames
                self.error = f"its env could not be made here ({type(error).__name__}: {error})"
        return self.env

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
        self.env, self.error = None, ""


def _ordered(run: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    agents = {a["name"]: i for i, a in enumerate(run["agents"])}
    envs = {e["name"]: i for i, e in enumerate(run["envs"])}
    return sorted(records, key=lambda r: (agents.get(r["agent"], -1), envs.get(r["env"], -1), r["seed"]))


def _episode_view(run_dir: Path, record: dict[str, Any], envs: _Envs, max_frames: int | None) -> EpisodeView:
    path = trajectory_path(run_dir, record["agent"], record["env"], record["seed"])
    trajectory = load_trajectory(path)
    view = EpisodeView(
        agent=record["agent"],
        env=record["env"],
        seed=record["seed"],
        steps=trajectory.steps,
        success=record["success"],
        episode_return=record["return"],
        details={
            "kind": record["kind"],
            "env id": record["env_id"],
            "progression": record["progression"],
            "ended by the env": record["ended"],
            "trajectory": str(path.relative_to(run_dir)),
        },
    )
    env = envs.get(record["agent"], record["env"])
    if env is None:
        view.note = f"No frames: {envs.error}."
        return view
    try:
        played = replay(env, record["seed"], trajectory.actions, recorded=trajectory.steps, max_frames=max_frames)
    except ValueError as error:  # ReplayMismatchError, or actions the env cannot take
        view.note = f"No frames: the replay did not reproduce the recording: {error}"
        return view
    view.steps, view.final_observation, view.frames = played.steps, played.final_observation, played.frames
    return view


def write_view(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    max_frames: int | None = MAX_FRAMES,
    videos: Sequence[str] = (),
    fps: float = 4.0,
    progress: bool = True,
) -> ViewResult:
    """Write the site of ``run_dir``'s trajectories into ``out`` (default ``run_dir/view``): one page per
    episode with its steps and at most ``max_frames`` frames (None: all), ``videos`` ("gif", "mp4") of them."""
    run_dir = Path(run_dir)
    if not (run_dir / RUN_FILE).is_file():
        raise FileNotFoundError(f"{run_dir} is not a bench run (no {RUN_FILE}): run `textagents bench run` first")
    run = json.loads((run_dir / RUN_FILE).read_text())
    records = [
        r
        for r in _ordered(run, read_episodes(run_dir))
        if trajectory_path(run_dir, r["agent"], r["env"], r["seed"]).is_file()
    ]
    if not records:
        raise FileNotFoundError(
            f"{run_dir} holds no {TRAJECTORIES_DIR}/ of its episodes: play the suite with "
            f"`textagents bench run SUITE --out NEW_DIR --trajectories`"
        )
    site = SiteWriter(run_dir / VIEW_DIR if out is None else out, videos=videos, fps=fps)
    envs = _Envs(run)
    result = ViewResult(index=site.out / INDEX, episodes=len(records))
    try:
        for record in tqdm(records, unit="episode", disable=not progress):
            view = _episode_view(run_dir, record, envs, max_frames)
            if view.note:
                result.without_frames.append(f"{view.agent} on {view.env}, seed {view.seed}: {view.note}")
            site.add(view)
    finally:
        envs.close()
    suite = run["suite"]
    intro = f"{len(records)} episodes of the run {run_dir}. {suite.get('description', '')}"
    site.finish(f"Episodes of {suite['name']}", intro)
    return result
