"""The originals' unlicensed prompts: never shipped, used only from a verified local or downloaded copy, and
read from Python source without running it."""

from __future__ import annotations

import hashlib

import pytest

from textagents.methods.core import original_prompts
from textagents.methods.core.original_prompts import PROMPT_ASSETS, original_prompt_file, string_assigned
from textagents.methods.ellm import prompt as ellm_prompt
from textenvs.data.assets import Asset
from textenvs.data.errors import ChecksumError, DataNotFoundError

FAKE_LM = '''
open("ran", "w").write("the file was executed")
class BulletPrompt:
    def __init__(self):
        self.prefix = """Original prefix.\\n\\n"""
        self.suffix = "Original question?\\n"
'''


def test_a_string_is_read_from_source_without_running_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert string_assigned(FAKE_LM, "BulletPrompt", "prefix") == "Original prefix.\n\n"
    assert not (tmp_path / "ran").exists()
    with pytest.raises(ValueError, match=r"no string assigned to self\.stop in class BulletPrompt"):
        string_assigned(FAKE_LM, "BulletPrompt", "stop")


def _pin(monkeypatch, name, text):
    data = text.encode()
    asset = PROMPT_ASSETS[name]
    fake = Asset(asset.name, asset.source, asset.upstream_path, len(data), hashlib.sha256(data).hexdigest(), "test")
    monkeypatch.setitem(PROMPT_ASSETS, name, fake)


def test_the_original_ellm_prompt_comes_from_a_verified_copy(tmp_path, monkeypatch):
    folder = tmp_path / "prompts" / "ellm"
    folder.mkdir(parents=True)
    (folder / "lm.py").write_text(FAKE_LM)
    monkeypatch.setenv("TEXTENVS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TEXTENVS_OFFLINE", "1")
    ellm_prompt._original_parts.cache_clear()
    with pytest.raises(ChecksumError, match="not textenvs' pinned copy"):  # the real pin: this file is not it
        ellm_prompt.goal_prompt("you see tree.", "", "", source="original")
    _pin(monkeypatch, "prompts/ellm/lm.py", FAKE_LM)
    ellm_prompt._original_parts.cache_clear()
    text = ellm_prompt.goal_prompt("you see tree.", "", "", source="original")
    assert text == "Original prefix.\n\nYou see tree. Original question?\n"
    assert ellm_prompt.goal_prompt("you see tree.", "", "").startswith(ellm_prompt.PREFIX)
    ellm_prompt._original_parts.cache_clear()
    with pytest.raises(ValueError, match="prompt source must be 'ours' or 'original'"):
        ellm_prompt.goal_prompt("you see tree.", "", "", source="paper")


def test_offline_without_a_copy_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTENVS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TEXTENVS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TEXTENVS_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match=r"raw\.githubusercontent\.com/mansicer/background-knowledge-rl"):
        original_prompt_file("prompts/bk/user_improve.txt")
    with pytest.raises(KeyError, match="unknown original prompt"):
        original_prompt_file("prompts/ellm/other.py")


def test_bk_uses_the_original_files_with_our_placeholders(tmp_path, monkeypatch):
    from textagents.methods.bk.code_potential import prompts

    texts = {
        "prompts/bk/system_task_description.txt": "Original system.",
        "prompts/bk/user_error_feedback.txt": "Error: {traceback_msg}",
        "prompts/bk/user_improve.txt": "Cases: {examples_description}",
    }
    for name, text in texts.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        _pin(monkeypatch, name, text)
    monkeypatch.setenv("TEXTENVS_DATA_DIR", str(tmp_path))
    original = prompts("original")
    assert original["system"] == "Original system."
    assert original["error"].format(error="boom") == "Error: boom"
    assert original["improve"].format(examples="x") == "Cases: x"
    assert prompts("ours")["system"] != original["system"]
    assert original_prompts.PROMPT_SOURCES == ("ours", "original")
