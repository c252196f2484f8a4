"""The interface every method implements, and what the runner hands it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textagents.llm.base import LLMBackend
from textagents.methods.core.config import MethodConfig
from textagents.methods.core.run_dir import Checkpoint


@dataclass
class RunContext:
    """What a method may use: its run folder, the LLM (built on first use, recorded to the run's
    ``llm_calls.jsonl`` or replayed from a recording), and whether the user accepted running LLM-written code
    with no OS boundary (``--unsafe-local-exec``; never from a config)."""

    run_dir: Path
    llm: Callable[[], LLMBackend]
    unsafe_local_exec: bool = False


class Method(ABC):
    """A paper's training method, as the runner drives it.

    ``train_iteration(i)`` does iteration ``i`` (1-based) and returns its metrics; ``evaluate()`` returns the
    method's evaluation metrics; ``checkpoint(i)`` / ``restore(checkpoint)`` save and load everything a
    resumed run needs to continue exactly as an uninterrupted one (RNG states included);
    ``report_sections(metrics)`` adds the method's own markdown to ``report.md`` (the paper's numbers beside
    ours, what falls short).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    config_class: ClassVar[type[MethodConfig]]
    #: What ``textagents method compare`` plots on the x axis of ``comparison_curves``.
    comparison_x: ClassVar[str] = "iteration"

    def __init__(self, config: MethodConfig, context: RunContext):
        self.config = config
        self.context = context

    @abstractmethod
    def train_iteration(self, iteration: int) -> dict[str, Any]: ...

    @abstractmethod
    def evaluate(self) -> dict[str, Any]: ...

    @abstractmethod
    def checkpoint(self, iteration: int) -> Checkpoint: ...

    @abstractmethod
    def restore(self, checkpoint: Checkpoint) -> None: ...

    def report_sections(self, metrics: list[dict[str, Any]]) -> list[str]:
        return []

    @staticmethod
    def comparison_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
        """The curves ``textagents method compare`` averages over seeds: panel -> (x, y) points. By default
        every numeric evaluation metric against the iteration."""
        curves: dict[str, list[tuple[float, float]]] = {}
        for record in metrics:
            if record.get("kind") != "eval":
                continue
            for key, value in record.items():
                if key not in ("iteration", "time") and isinstance(value, int | float) and not isinstance(value, bool):
                    curves.setdefault(key, []).append((record["iteration"], value))
        return curves

    @staticmethod
    def comparison_sections(runs: dict[str, dict[int, list[dict[str, Any]]]], out: Path) -> list[str]:
        """The method's own markdown for ``comparison.md``, from every run's metrics (arm label -> seed ->
        records), its figures written into ``out``: e.g. the paper's table with error bars over seeds."""
        return []

    def close(self) -> None:  # noqa: B027  (optional hook: most methods hold nothing to release)
        """Release what the method holds (env workers, models)."""
