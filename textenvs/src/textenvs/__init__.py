"""textenvs: standardized Gymnasium environments that speak text and pixels.

``import textenvs`` registers every id, so ``gym.make("BabyAI-Text-GoToLocal-v0")`` works;
``gym.make("textenvs:<id>")`` works without the import.
"""

from textenvs.core import EnvEntry, Expert, StepOutcome, TextEnv, make_vec
from textenvs.core.registration import register_envs
from textenvs.envs import ENV_TABLE
from textenvs.envs.crafter_text.metrics import crafter_score

__version__ = "0.1.0"

register_envs(ENV_TABLE)


def registered_ids(family: str | None = None) -> list[str]:
    """Every textenvs id, optionally of one family."""
    return [e.id for e in ENV_TABLE if family is None or e.family == family]


__all__ = [
    "ENV_TABLE",
    "EnvEntry",
    "Expert",
    "StepOutcome",
    "TextEnv",
    "crafter_score",
    "make_vec",
    "registered_ids",
]
