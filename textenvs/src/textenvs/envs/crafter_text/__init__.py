"""Crafter-Text: Crafter (Hafner 2021) with the captions of SmartPlay, ELLM and BALROG.

Importing this package does not import ``crafter``; the env class lives in ``.env``.
"""

from textenvs.envs.crafter_text.captioner import CAPTION_STYLES, balrog_contexts, caption, ellm_lines
from textenvs.envs.crafter_text.constants import ACHIEVEMENTS, COMMANDS
from textenvs.envs.crafter_text.metrics import crafter_score, episode_metrics, success_rates
from textenvs.envs.crafter_text.registration import ENV_ENTRIES
from textenvs.envs.crafter_text.tasks import TASKS

__all__ = [
    "ACHIEVEMENTS",
    "CAPTION_STYLES",
    "COMMANDS",
    "ENV_ENTRIES",
    "TASKS",
    "balrog_contexts",
    "caption",
    "crafter_score",
    "ellm_lines",
    "episode_metrics",
    "success_rates",
]
