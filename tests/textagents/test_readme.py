"""The README's command table against the ``textagents`` parser and the method registry."""

from __future__ import annotations

import argparse
import itertools
import re
from pathlib import Path

import pytest

from textagents.cli import build_parser, main

README = Path(__file__).resolve().parents[2] / "README.md"
TABLE_ROWS = [line for line in README.read_text().splitlines() if line.startswith("| `")]
USAGES = [span for row in TABLE_ROWS for span in re.findall(r"`(textagents [^`]+)`", row.split(" | ")[0])]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def _positionals(usage: str) -> tuple[str, int, int]:
    """The command a README usage names, how many positionals the README gives it, and how many it needs."""
    parser, words = build_parser(), usage.split()[1:]
    path = ["textagents"]
    while words and words[0] in _subcommands(parser):
        path.append(words[0])
        parser = _subcommands(parser)[words.pop(0)]
    given = len(list(itertools.takewhile(lambda w: not w.startswith(("-", "[")), words)))
    needed = [a for a in parser._actions if not a.option_strings and a.nargs not in ("?", "*", argparse.PARSER)]
    return " ".join(path), given, len(needed)


@pytest.mark.parametrize("usage", USAGES)
def test_each_readme_usage_gives_every_required_positional_argument(usage):
    command, given, needed = _positionals(usage)
    assert given >= needed, f"README's `{usage}`: {command} needs {needed} positional arguments"


def test_the_readme_names_every_method_that_method_list_shows(capsys):
    assert main(["method", "list"]) == 0
    shown = re.findall(r"^(\w+): ", capsys.readouterr().out, flags=re.MULTILINE)
    row = next(row for row in TABLE_ROWS if "`textagents method list`" in row)
    assert "lgqd" in shown and [name for name in shown if f"`{name}`" not in row] == []
