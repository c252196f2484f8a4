"""``textenvs dataset create``: the command line of ``textenvs.trajectories.create_dataset``."""

from __future__ import annotations

import argparse
from typing import Any

from textenvs.core.messages import short_repr
from textenvs.data import parse_yaml
from textenvs.trajectories.info import EXTRA, FORMATS
from textenvs.trajectories.record import POLICIES


def parse_env_kwarg(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as YAML (``max_steps=64``, ``obs_mode=text+pixels``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--env-kwarg {short_repr(text)} is not KEY=VALUE (e.g. --env-kwarg max_steps=64)")
    return key.strip(), parse_yaml(value, f"--env-kwarg {short_repr(key.strip())}")


def cmd_create(args: argparse.Namespace) -> int:
    from textenvs.trajectories.create import create_dataset

    info = create_dataset(
        args.env_id,
        args.out,
        episodes=args.episodes,
        policy=args.policy,
        format=args.format,
        seed=args.seed,
        env_kwargs=dict(parse_env_kwarg(t) for t in args.env_kwarg or []),
        progress=not args.no_progress,
    )
    print(f"{info.episodes} episodes ({info.steps} steps) of {info.policy} on {info.env_id} written to {args.out}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``dataset create`` on the ``textenvs`` command's subparsers."""
    dataset = sub.add_parser("dataset", help=f"trajectories as Minari or Hugging Face datasets (textenvs[{EXTRA}])")
    actions = dataset.add_subparsers(dest="dataset_command", required=True)
    create = actions.add_parser("create", help="play seeded episodes of a policy and write them as a dataset")
    create.add_argument("env_id")
    create.add_argument("--episodes", type=int, required=True)
    create.add_argument("--policy", default="expert", choices=list(POLICIES))
    create.add_argument("--out", required=True, help="the dataset folder (new or empty)")
    create.add_argument("--format", default="hf", choices=FORMATS, help="hf: parquet + card; minari: Minari")
    create.add_argument("--seed", type=int, default=0, help="episode i is reset with seed SEED + i (default 0)")
    create.add_argument("--env-kwarg", action="append", metavar="KEY=VALUE", help="an env keyword argument")
    create.add_argument("--no-progress", action="store_true", help="no progress bar")
    create.set_defaults(func=cmd_create)
