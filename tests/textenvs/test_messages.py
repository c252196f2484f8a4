"""Values in error messages: a short value reads as its repr, a huge or self-referencing one in a few words."""

from __future__ import annotations

import time

import pytest

from textenvs.core.messages import MAX_REPR_CHARS, short_repr, type_and_repr


@pytest.mark.parametrize("value", ["forty", 3, 0.5, None, True, [1, 2], {"a": 1}, ("x",)])
def test_a_short_value_reads_as_its_repr(value: object) -> None:
    assert short_repr(value) == repr(value)


def test_a_huge_value_is_shortened_without_walking_it() -> None:
    shared = ["x"] * 9
    for _ in range(8):
        shared = [shared] * 9  # 9**9 values, the shape a YAML alias bomb builds
    endless: list = []
    endless.append(endless)
    start = time.perf_counter()
    for value in ("x" * 10**6, list(range(10**6)), shared, endless):
        assert len(short_repr(value)) <= MAX_REPR_CHARS
    assert time.perf_counter() - start < 1
    assert short_repr(list(range(10**6))) == "[0, 1, 2, 3, 4, 5, ...]"


def test_type_and_repr_names_the_type() -> None:
    assert type_and_repr("forty") == "str 'forty'"
