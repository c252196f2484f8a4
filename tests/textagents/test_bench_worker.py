"""The worker: an episode depends only on its task, whatever the process played before."""

from __future__ import annotations

from textagents.bench.agents import NoOptions
from textagents.bench.suite import AgentConfig, EnvConfig, EpisodeTask
from textagents.bench.worker import play_task

RANDOM = AgentConfig(name="random", kind="random", options=NoOptions())


def test_an_env_name_reused_with_other_kwargs_gets_its_own_env(data_dir):
    short = EnvConfig(name="GoTo", id="BabyAI-Text-GoToLocal-v0", kwargs={"max_steps": 3}, seeds=(0,))
    long = EnvConfig(name="GoTo", id="BabyAI-Text-GoToLocal-v0", kwargs={"max_steps": 60}, seeds=(0,))
    assert play_task(EpisodeTask(RANDOM, short, 0, 1000))["steps"] <= 3
    assert play_task(EpisodeTask(RANDOM, long, 0, 1000))["steps"] > 3
