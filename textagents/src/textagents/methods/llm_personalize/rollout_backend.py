"""The backend LLM-Personalize's planner generates with in a round (``rollout_backend``): the run's
transformers model (default), or llama.cpp on a GGUF export of the round's weights (``llamacpp``).

The GGUF of a round's weights is ``model-<type>.gguf`` in its model folder (``models/iter_N``; the base
model's in ``models/base``), written atomically by ``textagents.llm.gguf_export`` from the transformers model
in memory, with the base model's downloaded GGUF as the metadata reference. A fine-tune writes it again; a
resumed run reuses the file of its checkpoint's model. llama.cpp completes the prompt tokens the
transformers backend would generate from (its chat template and tokenizer), and its calls are recorded into
the run's recording under the same model name, so a replay does not depend on the rollout backend.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

from textagents.llm.base import LLMBackend
from textagents.llm.gguf_export import reference_gguf, write_gguf
from textagents.llm.record import RecordingBackend
from textagents.methods.llm_personalize.plan_parser import steps_read

ROLLOUT_BACKENDS = ("transformers", "llamacpp")
BASE_MODEL_DIR = Path("models") / "base"
#: llama.cpp's context: a planner prompt grows with what the robot has seen (~300 tokens at the start).
N_CTX = 4096


def gguf_in(folder: Path, outtype: str) -> Path:
    """Where the GGUF export of the weights in model folder ``folder`` is kept."""
    return folder / f"model-{outtype}.gguf"


class LlamaCppPlanner:
    """llama.cpp over the GGUF of the weights the run trains (``tuned``: a ``TransformersBackend``); the
    last one opened is kept open. ``base_model``: the run's ``model`` value, whose GGUF is the reference;
    ``record``: the run's recording, or None; ``threads``: llama.cpp's (None: its default); ``state_cache_mb``:
    ``LlamaCppBackend``'s (an episode's next prompt starts from its previous call's state); ``max_steps``: a
    plan's generation ends once it has more steps than the planner reads (``plan_parser.steps_read``; None:
    it goes on to the stop string, the token limit or the end of the answer); ``parallel``: plans decoded
    together (``ParallelLlamaCppBackend``; 1: ``LlamaCppBackend``, one after another)."""

    def __init__(
        self,
        base_model: str | os.PathLike[str] | None,
        outtype: str,
        record: Path | None,
        threads: int | None = None,
        state_cache_mb: int = 0,
        max_steps: int | None = None,
        parallel: int = 1,
    ):
        self.reference = reference_gguf(base_model) if base_model is not None else None
        self.outtype = outtype
        self.record = record
        self.threads = threads
        self.state_cache_mb = state_cache_mb
        self.max_steps = max_steps
        self.parallel = parallel
        self._open: tuple[Path, LLMBackend, Any] | None = None

    def export(self, tuned: Any, folder: Path) -> Path:
        """Write the GGUF of ``tuned``'s weights into ``folder``, replacing any earlier one."""
        path = gguf_in(folder, self.outtype)
        if self._open is not None and self._open[0] == path:
            self.close()
        return write_gguf(tuned.model, tuned.tokenizer, path, reference=self.reference, outtype=self.outtype)

    def backend(self, tuned: Any, folder: Path) -> LLMBackend:
        """The planner over ``folder``'s GGUF, exported from ``tuned`` first when the file is missing."""
        from textagents.llm.llamacpp_backend import LlamaCppBackend
        from textagents.llm.llamacpp_parallel import ParallelLlamaCppBackend

        path = gguf_in(folder, self.outtype)
        if self._open is not None and self._open[0] == path:
            return self._open[1]
        if not path.is_file():
            self.export(tuned, folder)
        self.close()
        options: dict[str, Any] = {
            "n_ctx": N_CTX,
            "n_threads": self.threads,
            "model_name": tuned.model_name,
            "chat_prompt": lambda messages: tuned.encode(tuned.chat_prompt(messages)),
            "logits_all": False,
            "state_cache_mb": self.state_cache_mb,
            "stop_when": None if self.max_steps is None else partial(steps_read, max_steps=self.max_steps),
        }
        if self.parallel == 1:
            llama = LlamaCppBackend(path, **options)
        else:
            llama = ParallelLlamaCppBackend(path, parallel=self.parallel, **options)
        planner = llama if self.record is None else RecordingBackend(llama, self.record)
        self._open = (path, planner, llama)
        return planner

    def close(self) -> None:
        if self._open is not None:
            self._open[2].close()
            self._open = None
