"""Ordinary mistakes on the ``textagents`` command line: one line on stderr, a non-zero status, no traceback
(unless ``--debug``)."""

from __future__ import annotations

import pytest

from tests.textenvs.corridor_env import CORRIDOR_ID
from textagents.cli import main


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: "), err
    return err


def test_unknown_env_id(capsys):
    assert main(["play", "TestCoridor-v0", "--agent", "random"]) == 2
    assert "TestCoridor" in _one_error_line(capsys)


def test_missing_run_directory(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "absent")]) == 2
    assert "is not a finished training run" in _one_error_line(capsys)


def test_bad_yaml_method_config(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("settings: [\n")
    assert main(["method", "run", "example", str(config), "--out", str(tmp_path / "run")]) == 2
    assert str(config) in _one_error_line(capsys)


def test_missing_method_config(tmp_path, capsys):
    assert main(["method", "run", "example", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "run")]) == 2
    assert "absent.yaml" in _one_error_line(capsys)


def test_debug_raises_with_the_traceback(tmp_path):
    with pytest.raises(FileNotFoundError):
        main(["--debug", "evaluate", str(tmp_path / "absent")])


def test_a_good_command_is_unchanged(capsys):
    assert main(["play", CORRIDOR_ID, "--agent", "expert"]) == 0
    assert capsys.readouterr().err == ""
