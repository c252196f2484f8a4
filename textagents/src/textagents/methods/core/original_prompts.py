"""The original papers' prompt files where they carry no license (ELLM, background-knowledge-rl): never
shipped with the project. A method ships its own wording with the same structure; with
``prompt_source: original`` it uses the original text instead, downloaded at the pinned commit into the
user cache and checked by sha256 (textenvs' asset machinery), exactly as the data files are.

Found in ``$TEXTENVS_DATA_DIR/<name>`` first (an offline machine: copy the file there), then the cache,
then downloaded (unless ``TEXTENVS_OFFLINE=1``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from textenvs.data.assets import Asset, Source
from textenvs.data.checksum import mismatch, verify
from textenvs.data.download import fetch
from textenvs.data.errors import DataNotFoundError
from textenvs.data.settings import cache_dir, env_data_dir, offline

ELLM = Source("yuqingd/ellm", "e068cf464d3808aa7ba97f4dcf9667b1721c9b43")
BACKGROUND_KNOWLEDGE = Source("mansicer/background-knowledge-rl", "5f62882288fa2945a82e7b73354d5b1958df6913")
_UNLICENSED = "none (not redistributable: downloaded by the user)"
#: background-knowledge-rl's prompt files: our name under ``prompts/bk/``, the upstream path, bytes, sha256.
_BK_FILES = (
    (
        "system_task_description.txt",
        "prompts/coding/system_task_description.txt",
        786,
        "ecd9f6ea557e848e8a6705039327ad342be24c4d429c2012de08741fb44ccaf6",
    ),
    (
        "user_error_feedback.txt",
        "prompts/coding/user_error_feedback.txt",
        149,
        "94dad2a430bdd6adb75be12409cb96c29457c2f26f20d024e8d07fb501a88e42",
    ),
    (
        "user_improve.txt",
        "prompts/coding/user_improve.txt",
        387,
        "c90598c7ce8cb28e85b4c1a03691757b92036601de34c10b967224734bd630f8",
    ),
    (
        "goal_suggestion/system.txt",
        "prompts/goal_suggestion/system.txt",
        1117,
        "c89de49547de0b0f3bf8edb515c19207a1fcab5d46ecdb0380ccd67bd8f726f2",
    ),
    (
        "goal_suggestion/user.txt",
        "prompts/goal_suggestion/user.txt",
        202,
        "2d77451d4c66bcc9c2da303035aba1b9df27f6ffb533ac86f9d15ad0a9fe9e0e",
    ),
    (
        "preference_labeling/system.txt",
        "prompts/preference_labeling/system.txt",
        1127,
        "ce13416411b7a29e68810c4fc3eb799a2031345a5f25529f4be36a6ad02c5954",
    ),
    (
        "preference_labeling/user.txt",
        "prompts/preference_labeling/user.txt",
        95,
        "d66045d78ee81f91573ccdc861a8fc6f45d6676d76843dee2f2699d78999798f",
    ),
)

PROMPT_ASSETS: dict[str, Asset] = {
    asset.name: asset
    for asset in (
        Asset(
            "prompts/ellm/lm.py",
            ELLM,
            "text_crafter/lm.py",
            17927,
            "341d484f6e0e5dc76002cb6e04c8f470e0e810ad933c054427d1f2b3226f9fe1",
            _UNLICENSED,
        ),
        *(
            Asset(f"prompts/bk/{name}", BACKGROUND_KNOWLEDGE, upstream, size, digest, _UNLICENSED)
            for name, upstream, size, digest in _BK_FILES
        ),
    )
}
PROMPT_SOURCES = ("ours", "original")


def original_prompt_file(name: str) -> Path:
    """A verified local copy of the original prompt file ``name`` (a key of ``PROMPT_ASSETS``)."""
    if name not in PROMPT_ASSETS:
        raise KeyError(f"unknown original prompt {name!r}; known: {sorted(PROMPT_ASSETS)}")
    asset = PROMPT_ASSETS[name]
    local = env_data_dir()
    if local is not None and (local / name).is_file():
        verify(local / name, asset)
        return local / name
    cached = cache_dir() / name
    if cached.is_file() and mismatch(cached, asset) is None:
        return cached
    if offline():
        raise DataNotFoundError(
            f"the original prompt {name!r} is not on this machine and TEXTENVS_OFFLINE=1: download {asset.url} "
            f"(sha256 {asset.sha256}) into $TEXTENVS_DATA_DIR/{name}, or use prompt_source: ours"
        )
    return fetch(asset, cached, progress=False)


def original_text(name: str) -> str:
    return original_prompt_file(name).read_text()


def string_assigned(source: str, class_name: str, attribute: str) -> str:
    """The string literal assigned to ``self.<attribute>`` in ``class_name``'s methods, read from Python
    ``source`` without running it."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for assign in ast.walk(node):
                if isinstance(assign, ast.Assign) and isinstance(assign.value, ast.Constant):
                    for target in assign.targets:
                        if isinstance(target, ast.Attribute) and target.attr == attribute:
                            return str(assign.value.value)
    raise ValueError(f"no string assigned to self.{attribute} in class {class_name}")
