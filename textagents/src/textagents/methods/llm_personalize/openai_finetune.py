"""Fine-tuning through OpenAI's fine-tuning API, as LLM-Personalize fine-tuned gpt-3.5-turbo.

``export_chat_jsonl`` writes pairs in the chat format the API accepts (one ``{"messages": [...]}`` per line,
system / user / assistant, the plan last), checked line by line, atomically. ``OpenAIFineTuner`` uploads
such a file, creates the job with the ``openai`` client of the run's ``OpenAIBackend`` (from the current
model, so self-training continues from the last fine-tuned model), waits for it, and points the backend at
the fine-tuned model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textagents.bench.store import write_text_atomic

_ROLES = ("system", "user", "assistant")
_DONE = ("succeeded", "failed", "cancelled")


def check_chat_pair(pair: Sequence[dict[str, str]], index: int = 0) -> None:
    """A clear error unless ``pair`` is system, user, assistant messages with non-empty string contents."""
    roles = tuple(m.get("role") for m in pair) if isinstance(pair, Sequence) else None
    if roles != _ROLES:
        raise ValueError(f"pair {index}: roles must be {list(_ROLES)}, got {list(roles or [])}")
    for message in pair:
        if not isinstance(message.get("content"), str) or not message["content"].strip():
            raise ValueError(f"pair {index}: the {message['role']} message has no text")


def export_chat_jsonl(pairs: Sequence[Sequence[dict[str, str]]], path: str | Path) -> Path:
    """``pairs`` as the fine-tuning API's chat JSONL at ``path`` (written atomically)."""
    for index, pair in enumerate(pairs):
        check_chat_pair(pair, index)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"messages": [{"role": m["role"], "content": m["content"]} for m in pair]}) for pair in pairs]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return path


@dataclass
class OpenAIFineTuner:
    """Fine-tunes the model of ``backend`` (an ``OpenAIBackend``) and switches the backend to the result.

    ``poll_s``: seconds between status checks; ``timeout_s``: give up (the job keeps running on the server:
    its id is in the error).
    """

    backend: Any
    poll_s: float = 30.0
    timeout_s: float = 6 * 3600.0
    sleep: Callable[[float], None] = time.sleep

    def finetune(self, dataset: str | Path, *, epochs: float, suffix: str) -> dict[str, Any]:
        client = self.backend.client
        dataset = Path(dataset)
        uploaded = client.files.create(file=(dataset.name, dataset.read_bytes()), purpose="fine-tune")
        job = client.fine_tuning.jobs.create(
            training_file=uploaded.id,
            model=self.backend.model_name,
            suffix=suffix,
            hyperparameters={"n_epochs": max(1, round(epochs))},
        )
        waited = 0.0
        while job.status not in _DONE:
            if waited >= self.timeout_s:
                raise TimeoutError(f"fine-tuning job {job.id} still {job.status!r} after {waited:.0f} s")
            self.sleep(self.poll_s)
            waited += self.poll_s
            job = client.fine_tuning.jobs.retrieve(job.id)
        if job.status != "succeeded" or not job.fine_tuned_model:
            raise RuntimeError(f"fine-tuning job {job.id} ended {job.status!r}: {getattr(job, 'error', None)}")
        self.backend.model_name = job.fine_tuned_model
        return {"job": job.id, "model": job.fine_tuned_model, "trained_tokens": job.trained_tokens}
