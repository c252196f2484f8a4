"""The environment contract shared by every family."""

from textenvs.core.commands import CommandVocabulary, normalize_command
from textenvs.core.episode import EpisodeResult, run_episode
from textenvs.core.expert import Expert
from textenvs.core.registration import EnvEntry, register_envs
from textenvs.core.spaces import OBS_MODES, PRINTABLE, image_space, text_space
from textenvs.core.text_env import STANDARD_INFO_KEYS, StepOutcome, TextEnv
from textenvs.core.vector import make_vec

__all__ = [
    "OBS_MODES",
    "PRINTABLE",
    "STANDARD_INFO_KEYS",
    "CommandVocabulary",
    "EnvEntry",
    "EpisodeResult",
    "Expert",
    "StepOutcome",
    "TextEnv",
    "image_space",
    "make_vec",
    "normalize_command",
    "register_envs",
    "run_episode",
    "text_space",
]
