from __future__ import annotations

import pytest

from textagents.agents.parsing import MAX_OUTPUT_CHARS, parse_command

COMMANDS = ["turn left", "turn right", "go forward", "pick up", "drop", "toggle"]


@pytest.mark.parametrize(
    ("output", "command", "kind"),
    [
        ("go forward", "go forward", "exact"),
        ("  Go Forward.\n", "go forward", "exact"),
        ("Action 2: turn left", "turn left", "exact"),
        ("step 1: toggle\nstep 2: drop", "toggle", "exact"),
        ('"pick up"', "pick up", "exact"),
        ("I think I should turn right now", "turn right", "contained"),
        ("trun lft", "turn left", "fuzzy"),
        ("", "drop", "fallback"),
        ("import os; os.system('rm -rf /')", "drop", "fallback"),
    ],
)
def test_parse_command_kinds(output, command, kind):
    parsed = parse_command(output, COMMANDS, fallback="drop")
    assert (parsed.command, parsed.kind) == (command, kind)
    assert parsed.is_miss == (kind in ("fuzzy", "fallback"))


@pytest.mark.parametrize("look_alike", ["PIC\u212a UP", "pick\u00a0up", "pick \u0443p"])
def test_a_unicode_look_alike_is_never_an_exact_or_contained_match(look_alike: str):
    parsed = parse_command(look_alike, COMMANDS, fallback="drop")
    assert parsed.is_miss


def test_fallback_that_is_not_admissible_uses_the_first_command():
    assert parse_command("???", COMMANDS, fallback="fly").command == "turn left"


def test_non_string_and_huge_outputs_never_raise():
    assert parse_command(None, COMMANDS).kind == "fallback"  # type: ignore[arg-type]
    huge = "x" * (10 * MAX_OUTPUT_CHARS) + "go forward"
    assert parse_command(huge, COMMANDS).kind != "exact"


def test_longest_contained_command_wins():
    place = "place tennis ball 1 on bathroom 0 carpet 15"
    parsed = parse_command(place, ["go to bathroom 0", place])
    assert parsed.kind == "exact"
    parsed = parse_command("now go to bathroom 0 please", ["go to bathroom 0", "go to bathroom 0 carpet 15"])
    assert (parsed.command, parsed.kind) == ("go to bathroom 0", "contained")


def test_no_admissible_commands_is_an_error():
    with pytest.raises(ValueError, match="admissible"):
        parse_command("go", [])
