"""``textenvs replay``: the command line of ``textenvs.viewer.replay_episode``."""

from __future__ import annotations

import argparse

from textenvs.viewer.replay_episode import OUTPUT_FORMATS, replay_episode, trajectory_from_args


def cmd_replay(args: argparse.Namespace) -> int:
    trajectory = trajectory_from_args(args.trajectory, args.env_id, args.seed, args.action)
    max_frames = None if args.max_frames < 0 else args.max_frames
    written = replay_episode(trajectory, args.out, args.format or ("gif", "html"), max_frames=max_frames, fps=args.fps)
    checked = "reproduced the recording" if args.trajectory else "played"
    print(f"{len(trajectory.steps)} steps of {trajectory.env_id} (seed {trajectory.seed}) {checked}")
    print("\n".join(f"wrote {path}" for path in written.values()))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``replay`` on the ``textenvs`` command's subparsers."""
    p = sub.add_parser(
        "replay",
        help="play a recorded episode again (checking it reproduces): GIF/MP4 of its frames and an HTML page",
        description="Replay a trajectory file (textagents bench run --trajectories) or --env-id/--seed/--action "
        "values in the env, rendering its frames. A recording whose actions do not give back its observations, "
        "rewards and flags is refused.",
    )
    p.add_argument("trajectory", nargs="?", help="a trajectory file, e.g. RUN/trajectories/AGENT/ENV/SEED.json")
    p.add_argument("--env-id", help="the env (needed without a trajectory file, or for a file without a header)")
    p.add_argument("--seed", type=int, help="the reset seed (likewise)")
    p.add_argument(
        "--action",
        action="append",
        metavar="ACTION",
        help="an action, in order (repeatable): a command, or a JSON array for a continuous env, e.g. '[4, 4]'",
    )
    p.add_argument("--out", required=True, help="folder to write into")
    p.add_argument(
        "--format",
        action="append",
        choices=OUTPUT_FORMATS,
        help="what to write (repeatable; default gif and html; mp4 needs textenvs[video])",
    )
    p.add_argument("--max-frames", type=int, default=200, help="frames kept, spread over the episode (-1: all)")
    p.add_argument("--fps", type=float, default=4.0, help="video frames per second (default %(default)s)")
    p.set_defaults(func=cmd_replay)
