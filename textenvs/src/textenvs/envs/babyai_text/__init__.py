"""BabyAI-Text: BabyAI levels (minigrid 3.x, GLAM's, background-knowledge-rl's) with GLAM's captions.

``caption``, ``make_level`` and ``BabyAITextEnv`` import minigrid, so they load on first use: importing
this package (as ``import textenvs`` does for the registration table) needs no minigrid.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "caption": "textenvs.envs.babyai_text.captioner",
    "caption_view": "textenvs.envs.babyai_text.captioner",
    "make_level": "textenvs.envs.babyai_text.levels",
    "BabyAITextEnv": "textenvs.envs.babyai_text.env",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
