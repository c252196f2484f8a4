"""Turning untrusted LLM output into one admissible command.

LLM output is data, never code: it is truncated, normalized and matched against the admissible commands;
on a miss a fuzzy match or a fallback command is used and the kind of match is reported so that agents
can count misses.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from textenvs.core.commands import normalize_command

#: Longest LLM output looked at; the rest is ignored (a model that rambles cannot cost unbounded work).
MAX_OUTPUT_CHARS = 4_000
MATCH_KINDS = ("exact", "contained", "fuzzy", "fallback")

_LEADING_LABEL = re.compile(r"^\s*(?:[-*>#]+\s*|\d+[.):]\s*|(?:step|action|command|next step)\s*\d*\s*[:.-]\s*)", re.I)
_QUOTES = "\"'`"


@dataclass(frozen=True)
class ParsedCommand:
    """The command chosen for an LLM output and how it was found (one of ``MATCH_KINDS``)."""

    command: str
    kind: str
    output: str

    @property
    def is_miss(self) -> bool:
        """True when the output did not name an admissible command outright (fuzzy match or fallback)."""
        return self.kind in ("fuzzy", "fallback")


def candidate_lines(output: str) -> list[str]:
    """The non-empty lines of ``output`` with list markers, ``Action:``/``step 1:`` labels and quotes removed."""
    lines = []
    for line in output[:MAX_OUTPUT_CHARS].splitlines():
        previous = None
        while previous != line:
            previous, line = line, _LEADING_LABEL.sub("", line, count=1)
        line = line.strip().strip(_QUOTES).strip()
        if line:
            lines.append(line)
    return lines


def parse_command(
    output: str, admissible: Sequence[str], fallback: str | None = None, fuzzy_cutoff: float = 0.6
) -> ParsedCommand:
    """The admissible command ``output`` names.

    Tried in order on each line: an exact (normalized) match, then the longest admissible command the line
    contains, then (over all lines) the closest command by ``difflib`` ratio above ``fuzzy_cutoff``; when
    nothing matches, ``fallback`` when it is admissible now, else the first admissible command.
    """
    if not admissible:
        raise ValueError("parse_command needs at least one admissible command")
    if not isinstance(output, str):
        output = ""
    by_normal = {normalize_command(c): c for c in admissible}
    lines = candidate_lines(output)
    for line in lines:
        exact = by_normal.get(normalize_command(line))
        if exact is not None:
            return ParsedCommand(exact, "exact", output)
    longest_first = sorted(by_normal, key=len, reverse=True)
    for line in lines:
        normal = f" {normalize_command(line)} "
        contained = next((c for c in longest_first if f" {c} " in normal), None)
        if contained is not None:
            return ParsedCommand(by_normal[contained], "contained", output)
    for line in lines:
        close = difflib.get_close_matches(normalize_command(line), list(by_normal), n=1, cutoff=fuzzy_cutoff)
        if close:
            return ParsedCommand(by_normal[close[0]], "fuzzy", output)
    chosen = fallback if fallback in admissible else admissible[0]
    return ParsedCommand(chosen, "fallback", output)
