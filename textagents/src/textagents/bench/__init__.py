"""Leaderboard runs: suites of agents x environments x seeds, run locally or on Ray, resumable, reported.

``load_suite`` validates a suite file, ``run_suite`` plays its episodes into a run directory and
``write_report`` turns that directory into a leaderboard (``docs/bench.md``).
"""

from textagents.bench.agents import AGENT_KINDS, AgentKind
from textagents.bench.report import summarize, write_report
from textagents.bench.runner import run_suite
from textagents.bench.suite import EpisodeTask, Suite, SuiteError, load_suite

__all__ = [
    "AGENT_KINDS",
    "AgentKind",
    "EpisodeTask",
    "Suite",
    "SuiteError",
    "load_suite",
    "run_suite",
    "summarize",
    "write_report",
]
