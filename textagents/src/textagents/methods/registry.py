"""The methods ``textagents method`` knows: one table, name -> class (imported on use)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from textagents.bench.suite import unknown_choice


@dataclass(frozen=True)
class MethodEntry:
    name: str
    summary: str
    entry_point: str  # "module:Class"


METHOD_TABLE: tuple[MethodEntry, ...] = (
    MethodEntry(
        "example",
        "template method: tabular REINFORCE on BabyAI-Text commands from an LLM-scored prior",
        "textagents.methods.example.method:ExampleMethod",
    ),
    MethodEntry(
        "llm_personalize",
        "LLM-Personalize: a Housekeep planner, imitation of the demonstrator, reinforced self-training",
        "textagents.methods.llm_personalize.method:LLMPersonalizeMethod",
    ),
    MethodEntry(
        "glam",
        "GLAM: an LLM policy on BabyAI-Text fine-tuned online with PPO (lamorel-style caller)",
        "textagents.methods.glam.method:GlamMethod",
    ),
    MethodEntry(
        "ellm",
        "ELLM: DQN pretraining on Crafter rewarded for reaching LLM-suggested goals",
        "textagents.methods.ellm.method:EllmMethod",
    ),
    MethodEntry(
        "bk",
        "background-knowledge shaping: PPO with a potential from an LLM (BK-Code sandboxed, BK-Goal, BK-Pref)",
        "textagents.methods.bk.method:BKMethod",
    ),
)

METHODS = {entry.name: entry for entry in METHOD_TABLE}


class UnknownMethodError(ValueError):
    """A method name that is not in the table."""


def method_class(name: str) -> Any:
    if name not in METHODS:
        raise UnknownMethodError(unknown_choice("method", name, list(METHODS)))
    module, _, attribute = METHODS[name].entry_point.partition(":")
    return getattr(importlib.import_module(module), attribute)
