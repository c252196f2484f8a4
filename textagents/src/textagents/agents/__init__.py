"""Agents: the protocol, random / expert / human agents, and the LLM agents with their prompt builders."""

from textagents.agents.base import Agent
from textagents.agents.episode import EpisodeRecord, play_episode
from textagents.agents.expert_agent import ExpertAgent
from textagents.agents.few_shot import Demonstration, FewShotAgent, FewShotPrompt
from textagents.agents.human import HumanAgent
from textagents.agents.llm_agents import GenerationAgent, ScoreError, ScoringAgent
from textagents.agents.parsing import ParsedCommand, parse_command
from textagents.agents.prompts import (
    GenericPrompt,
    GlamPrompt,
    LLMPersonalizePrompt,
    Prompt,
    PromptBuilder,
    glam_prompt,
    prompt_builder_for,
)
from textagents.agents.random_agent import RandomAgent

__all__ = [
    "Agent",
    "Demonstration",
    "EpisodeRecord",
    "ExpertAgent",
    "FewShotAgent",
    "FewShotPrompt",
    "GenerationAgent",
    "GenericPrompt",
    "GlamPrompt",
    "HumanAgent",
    "LLMPersonalizePrompt",
    "ParsedCommand",
    "Prompt",
    "PromptBuilder",
    "RandomAgent",
    "ScoreError",
    "ScoringAgent",
    "glam_prompt",
    "parse_command",
    "play_episode",
    "prompt_builder_for",
]
