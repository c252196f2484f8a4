"""BK-Code's labelling stage: the LLM writes a potential function, which is checked, run in the sandbox on
sample observations, and sent back with the error or the values it gave, for a few rounds (the original's
``label_code.py`` loop, on text observations: ``potential(observation: str) -> float``). The last code
that ran without error is kept; every answer is in the run's recorded LLM calls. The prompts follow the
original's structure in our words (its files carry no license; ``prompt_source="original"`` uses them).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from textagents.bench.store import write_text_atomic
from textagents.llm.base import LLMBackend, chat_fitting
from textagents.methods.bk.config import SAMPLING, BKConfig
from textagents.methods.bk.environments import ENVIRONMENTS, family_name
from textagents.methods.bk.isolation import BUBBLEWRAP, UNSAFE_LOCAL_EXEC, choose_isolation
from textagents.methods.bk.knowledge import Knowledge
from textagents.methods.bk.phi_cache import CachedPotential
from textagents.methods.bk.samples import random_steps
from textagents.methods.bk.sandbox import (
    ALLOWED_IMPORTS,
    SandboxedPotential,
    SandboxStats,
    UnsafeCodeError,
    check_code,
)
from textagents.methods.core.original_prompts import original_text

#: Our wording of the original's request (its prompt files carry no license; ``prompt_source="original"``
#: downloads them): a reward engineer writing a task-agnostic reward of background knowledge.
SYSTEM_TASK = (
    "You design reward functions for reinforcement learning agents. I will describe an environment. Write a "
    "reward function that scores how well an agent's behaviour agrees with general knowledge of this "
    "environment: high when it does what someone who knows the environment would do, low otherwise. You "
    "are not told the agent's task, so keep the function general across the environment's tasks. Write it "
    "in Python; helper functions and intermediate variables are welcome."
)
INITIAL = (
    "Write this reward function as one Markdown Python code block, with exactly this signature:\n\n"
    "```python\ndef potential(observation: str) -> float:\n"
    '    """The reward of the current observation (text, as described above)."""\n    return 0.0\n```\n\n'
    f"Only these modules may be imported: {', '.join(sorted(ALLOWED_IMPORTS))}."
)
ERROR_FEEDBACK = (
    "Running the reward function above failed with this error:\n{error}\n\n"
    "Fix the problem and write a new, better reward function.\n"
)
IMPROVE = (
    "This is what the reward function gave on some observations:\n{examples}\n\n"
    "Study these results and write a new reward function that captures background knowledge better. First "
    "(a) say how the results show it can be improved, then (b) give the new function in the same format.\n"
)
_ORIGINAL_FILES = {
    "system": "prompts/bk/system_task_description.txt",
    "error": "prompts/bk/user_error_feedback.txt",
    "improve": "prompts/bk/user_improve.txt",
}


def prompts(source: str = "ours") -> dict[str, str]:
    """The system, error-feedback and improve prompts: ``ours`` or the ``original``'s files (downloaded and
    checked), whose placeholders are renamed to ours. The environment description and the request stay
    ours with either: the original asked for a function over minigrid's numeric grid."""
    if source == "ours":
        return {"system": SYSTEM_TASK, "error": ERROR_FEEDBACK, "improve": IMPROVE}
    if source != "original":
        raise ValueError(f"prompt source must be 'ours' or 'original', got {source!r}")
    texts = {key: original_text(name) for key, name in _ORIGINAL_FILES.items()}
    texts["error"] = texts["error"].replace("{traceback_msg}", "{error}")
    texts["improve"] = texts["improve"].replace("{examples_description}", "{examples}")
    return texts


_CODE_BLOCK = re.compile(r"```python\n(.*)```", re.DOTALL)


def extract_code(answer: str) -> str | None:
    """The answer's Python code block (the original's regular expression), or None."""
    match = _CODE_BLOCK.search(answer)
    return match.group(1) if match else None


@dataclass
class CodeLabelling:
    """The kept code (None when no round produced code that ran) and what happened in each round."""

    code: str | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)


def try_potential(
    code: str, samples: Sequence[str], isolation: str = BUBBLEWRAP
) -> tuple[str | None, list[float], SandboxStats]:
    """Check ``code`` against the allow-list and run it on ``samples`` in the sandbox, each twice: the error
    (None when it ran on every sample and answered each the same both times), the values it gave and the
    sandbox's counts (``impure``: the samples answered differently). Φ must be a function of the observation
    alone (``phi_cache``): code that keeps state between calls is refused."""
    try:
        check_code(code)
    except UnsafeCodeError as refused:
        return f"refused before running: {refused}", [], SandboxStats()
    with SandboxedPotential(code, isolation=isolation) as potential:
        values = [evaluation.value for evaluation in potential.evaluate([*samples, *samples])]
        first, second = values[: len(samples)], values[len(samples) :]
        stats = potential.stats
        if stats.failures:
            return stats.last_error, first, stats
        differing = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
        stats.impure = len(differing)
        if differing:
            i = differing[0]
            return (
                f"not a function of the observation: sample {i + 1} gave {first[i]:g}, then {second[i]:g} "
                "when given again; potential(observation) must keep no state between calls",
                first,
                stats,
            )
        return None, first, stats


def write_potential(
    backend: LLMBackend,
    family: str,
    samples: Sequence[str],
    *,
    rounds: int = 3,
    sampling: dict[str, Any] | None = None,
    prompt_source: str = "ours",
    isolation: str = BUBBLEWRAP,
) -> CodeLabelling:
    """Ask for a potential function, try it on ``samples`` in the sandbox, feed back, ``rounds`` times; a
    round whose conversation does not fit the model's context is asked without its oldest exchanges
    (``trimmed_messages``: how many were left out)."""
    if family not in ENVIRONMENTS:
        raise ValueError(f"no environment description for {family!r}; known: {sorted(ENVIRONMENTS)}")
    texts = prompts(prompt_source)
    messages = [
        {"role": "system", "content": texts["system"]},
        {"role": "system", "content": ENVIRONMENTS[family]},
        {"role": "user", "content": INITIAL},
    ]
    head = len(messages)
    result = CodeLabelling()
    for _ in range(rounds):
        answer, asked = chat_fitting(backend, messages, head, **(sampling or SAMPLING))
        trimmed = len(messages) - len(asked)
        messages.append({"role": "assistant", "content": answer})
        code = extract_code(answer)
        if code is None:
            error, values, stats = "no ```python code block in the answer", [], SandboxStats()
        else:
            error, values, stats = try_potential(code, samples, isolation)
        result.rounds.append(
            {
                "answer_chars": len(answer),
                "code": code is not None,
                "error": error,
                "impure": stats.impure > 0,
                "values": values,
                "trimmed_messages": trimmed,
            }
        )
        if error is not None:
            messages.append({"role": "user", "content": texts["error"].format(error=error)})
            continue
        result.code = code
        examples = "\n".join(
            f"Sample#{i + 1}\n{sample}\nThe computed reward is {value:.4f}."
            for i, (sample, value) in enumerate(zip(samples, values, strict=True))
        )
        messages.append({"role": "user", "content": texts["improve"].format(examples=examples)})
    return result


class CodeKnowledge(Knowledge):
    """BK-Code: the code ``write_potential`` kept (``potential.py`` in the run), run in the sandbox as Φ
    (kept by observation text: ``phi_cache``); the sandbox's evaluations, requests, failures by kind and cost
    per evaluation, and the cache's requests, hits and entries are its metrics (``sandbox/...``), and
    ``sandbox/os_boundary`` says whether bubblewrap isolated it (0 only with ``unsafe_local_exec``)."""

    def __init__(self, config: BKConfig, run_dir: Path, llm: Callable[[], LLMBackend], unsafe_local_exec: bool = False):
        super().__init__(config, run_dir, llm)
        # chosen before anything is written or asked, so that a machine without bubblewrap fails at once
        self.isolation = choose_isolation(unsafe_local_exec)
        if self.isolation == UNSAFE_LOCAL_EXEC:
            warnings.warn(
                "BK-Code runs LLM-written code with no OS boundary (--unsafe-local-exec)", RuntimeWarning, stacklevel=2
            )
        self.code: str | None = None
        self._potential: CachedPotential | None = None

    def label(self) -> dict[str, float]:
        config = self.config
        samples = [step.observation for step in random_steps(config.env_id, config.code_samples, config.knowledge_seed)]
        if config.code_file is not None:
            return self._label_from_file(Path(config.code_file), samples)
        labelling = write_potential(
            self.llm(),
            family_name(config.env_id),
            samples,
            rounds=config.code_rounds,
            sampling=config.sampling(),
            prompt_source=config.prompt_source,
            isolation=self.isolation,
        )
        self.code = labelling.code
        if self.code is not None:
            write_text_atomic(self.run_dir / "potential.py", self.code)
        return {
            "code_rounds_without_error": sum(r["error"] is None for r in labelling.rounds),
            "code_rounds_impure": sum(r["impure"] for r in labelling.rounds),
            "code_rounds_trimmed": sum(r["trimmed_messages"] > 0 for r in labelling.rounds),
            "code_kept": float(self.code is not None),
        }

    def _label_from_file(self, path: Path, samples: list[str]) -> dict[str, float]:
        """The potential of ``code_file`` (written by hand or by a stronger LLM elsewhere), checked and tried in
        the sandbox as an LLM's answer is; refused with its error when it does not run."""
        if not path.is_file():
            raise FileNotFoundError(
                f"code_file {str(path)!r} does not exist (paths are relative to the working folder)"
            )
        code = path.read_text()
        error, _, _ = try_potential(code, samples, self.isolation)
        if error is not None:
            raise ValueError(f"code_file {str(path)!r} does not run in the sandbox: {error}")
        self.code = code
        write_text_atomic(self.run_dir / "potential.py", code)
        return {"code_rounds_without_error": 1, "code_kept": 1.0, "code_from_file": 1.0}

    def state(self) -> dict[str, Any]:
        return {"code": self.code}

    def restore(self, state: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        self.code = state["code"]

    def potential(self) -> CachedPotential | None:
        if self._potential is None and self.code is not None:
            sandbox = SandboxedPotential(self.code, isolation=self.isolation)
            self._potential = CachedPotential(sandbox, self.config.code_cache_entries)
        return self._potential

    def metrics(self) -> dict[str, float]:
        if self._potential is None:
            return {}
        sandbox = self._potential.sandbox
        counts = {**sandbox.stats.as_dict(), **self._potential.metrics()}
        return {
            **{f"sandbox/{key}": value for key, value in counts.items()},
            "sandbox/os_boundary": float(sandbox.isolation == BUBBLEWRAP),
        }

    def close(self) -> None:
        if self._potential is not None:
            self._potential.sandbox.close()
