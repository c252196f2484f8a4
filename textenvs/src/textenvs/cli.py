"""The ``textenvs`` command: list ids, play one in the terminal, download data, run every expert."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import gymnasium as gym
import numpy as np
import yaml

import textenvs
from textenvs.core.registration import EnvEntry, unknown_id_error
from textenvs.data import DataNotFoundError
from textenvs.data.assets import GROUPS
from textenvs.trajectories import cli as dataset_cli
from textenvs.viewer import cli as replay_cli

#: Exceptions that report the user's input (a bad value, a missing file, bad YAML, a missing extra), not a bug.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError, yaml.YAMLError, gym.error.Error)
QUIT_WORDS = ("quit", "exit")
HELP_WORDS = ("help", "?")


def play_help(env: gym.Env) -> str:
    """What a player can type in ``textenvs play``."""
    if isinstance(env.action_space, gym.spaces.Box):
        low, high = env.action_space.low.min(), env.action_space.high.max()
        what = f"{env.action_space.shape[0]} numbers separated by spaces or commas, each in [{low:g}, {high:g}]"
    else:
        what = "one of the commands listed after 'Commands:' (case does not matter)"
    return f"Type {what}; 'help' shows this, 'quit' (or Ctrl-D) ends the game.\n"


def _entries(family: str | None) -> list[EnvEntry]:
    families = sorted({e.family for e in textenvs.ENV_TABLE})
    if family is not None and family not in families:
        raise SystemExit(f"unknown family {family!r}; valid families: {', '.join(families)}")
    return [e for e in textenvs.ENV_TABLE if family is None or e.family == family]


def _space_summary(space: gym.Space) -> str:
    if isinstance(space, gym.spaces.Dict):
        return "{" + ", ".join(f"{k}: {_space_summary(v)}" for k, v in space.spaces.items()) + "}"
    if isinstance(space, gym.spaces.Text):
        return f"Text({space.max_length})"
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, gym.spaces.Box):
        return f"Box{tuple(space.shape)}"
    return type(space).__name__


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with aligned columns."""
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _missing_data(error: DataNotFoundError) -> str:
    """The first sentence of a data error (its list of places searched does not fit in a table cell)."""
    return str(error).splitlines()[0].removesuffix(" Searched:")


def cmd_list(args: argparse.Namespace) -> int:
    rows = []
    for entry in _entries(args.family):
        missing = entry.missing_requirements()
        if missing:
            rows.append((entry.id, entry.family, f'needs pip install "textenvs[{entry.extra}]"', ""))
            continue
        try:
            env = gym.make(entry.id)
        except DataNotFoundError as error:
            rows.append((entry.id, entry.family, f"needs data: {_missing_data(error)}", ""))
            continue
        rows.append((entry.id, entry.family, _space_summary(env.observation_space), _space_summary(env.action_space)))
        env.close()
    print(format_table(("id", "family", "observation", "action"), rows))
    if any(row[2].startswith("needs data:") for row in rows):
        groups = ",".join(GROUPS)
        print(f"\nFetch missing data with `textenvs download {{{groups}}}`, or set TEXTENVS_DATA_DIR (docs/data.md).")
    return 0


def _read_action(env: gym.Env, line: str) -> Any:
    if isinstance(env.action_space, gym.spaces.Box):
        try:
            return np.array([float(v) for v in line.replace(",", " ").split()], dtype=env.action_space.dtype)
        except ValueError:
            return None
    return line


def play(env_id: str, seed: int | None, stdin: TextIO, stdout: TextIO, **kwargs: Any) -> int:
    """Let a person play ``env_id``, episode after episode (seeds ``seed``, ``seed + 1``, ...) until they type
    'quit' or the input ends."""
    if env_id not in gym.registry:
        raise unknown_id_error(env_id, gym.registry)
    env = gym.make(env_id, **kwargs)
    try:
        stdout.write(play_help(env))
        while _play_episode(env, seed, stdin, stdout):
            seed = None if seed is None else seed + 1
            stdout.write(f"\nNext episode{'' if seed is None else f' (seed {seed})'}; 'quit' ends the game.\n")
        stdout.write("\nBye.\n")
    finally:
        env.close()
    return 0


def _show_observation(obs: dict[str, Any], info: dict[str, Any], write: Callable[[str], Any]) -> None:
    if obs.get("mission"):
        write(f"Mission: {obs['mission']}\n")
    write(f"{obs.get('text', '')}\n")
    if info.get("feedback"):
        write(f"[{info['feedback']}]\n")
    if info["admissible_commands"]:
        write(f"Commands: {', '.join(info['admissible_commands'])}\n")


def _play_episode(env: gym.Env, seed: int | None, stdin: TextIO, stdout: TextIO) -> bool:
    """One episode from ``reset(seed=seed)``: show text, mission and admissible commands; read commands.

    True when the episode ended, False when the player quit (or the input ended) first.
    """
    obs, info = env.reset(seed=seed)
    total = 0.0
    write = stdout.write
    continuous = isinstance(env.action_space, gym.spaces.Box)
    prompt = f"action ({env.action_space.shape[0]} numbers)> " if continuous else "command> "
    while True:
        _show_observation(obs, info, write)
        write(prompt)
        stdout.flush()
        line = stdin.readline()
        if not line or line.strip().lower() in QUIT_WORDS:
            return False
        if line.strip().lower() in HELP_WORDS:
            write(play_help(env))
            continue
        action = _read_action(env, line.strip())
        if action is None or (continuous and action.shape != env.action_space.shape):
            write(f"[enter {env.action_space.shape[0]} numbers, e.g. 1.0 2.0]\n")
            continue
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        write(f"reward {reward:+.3f}  return {total:+.3f}\n")
        if terminated or truncated:
            write(f"Episode over ({'terminated' if terminated else 'truncated'}).\n")
            metrics = info.get("episode_metrics", {})
            write(format_table(("metric", "value"), sorted(metrics.items())) + "\n")
            return True


def cmd_play(args: argparse.Namespace) -> int:
    return play(args.env_id, args.seed, sys.stdin, sys.stdout)


def cmd_download(args: argparse.Namespace) -> int:
    from textenvs import data

    paths = data.download_group(args.group, dest=args.dest)
    print(f"{len(paths)} files of {args.group!r} verified in {args.dest or data.cache_dir()}")
    return 0


def cmd_experts(args: argparse.Namespace) -> int:
    from textenvs.experts_report import expert_table

    table, failures = expert_table(_entries(args.family), episodes=args.episodes, seed=args.seed)
    print(table)
    return 1 if failures else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="textenvs", description=__doc__)
    parser.add_argument("--version", action="version", version=f"textenvs {textenvs.__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list every id with its family and spaces")
    p.add_argument("--family", help="only this family")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("play", help="play an environment in the terminal")
    p.add_argument("env_id")
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("download", help="download data assets into the cache (or --dest)")
    p.add_argument("group", choices=("housekeep", "fastsim", "llm_personalize", "all"))
    p.add_argument("--dest", default=None, help="folder to download into (default: the user cache)")
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("experts", help="run every environment's expert and print a table of metrics")
    p.add_argument("--family", help="only this family")
    p.add_argument("--episodes", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_experts)

    dataset_cli.add_parser(sub)
    replay_cli.add_parser(sub)
    return parser


def run_command(
    command: Callable[[], int], prog: str, debug: bool, user_errors: tuple[type[BaseException], ...] = ()
) -> int:
    """Run a command line's command: an error becomes one line on stderr and exit status 2 (1 for an error
    that is not about the user's input, with the hint to rerun with ``--debug``), Ctrl-C status 130; with
    ``debug`` errors propagate with their traceback."""
    if debug:
        return command()
    try:
        return command()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (*USER_ERRORS, *user_errors) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        print(f"error: {type(error).__name__}: {error} ({prog} --debug ... shows the traceback)", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(lambda: args.func(args), "textenvs", args.debug)


if __name__ == "__main__":
    sys.exit(main())
