"""The answers a stage of LLM-Personalize's run got (a round of episodes played in lockstep: an evaluation or a
self-training round's rollouts), kept in the run as they come, so that a run stopped in the middle of an
iteration replays them instead of asking the model again.

A stage with a larger model takes hours (Qwen2.5-Coder-0.5B's first iteration: the zero-shot evaluation,
the baselines and imitation, ~4 h on one core), longer than a machine may be held; the run's checkpoints
come at the end of each iteration. With the log, a resumed run plays the stage's episodes again from their
start with the logged answers (the env is cheap and deterministic) up to where it stopped, then asks the
model, in the same rounds and batches as an uninterrupted run: the same results whatever the backend.

The file is JSON lines: a header (what the stage plays: its jobs, variant, seed, sampling and rules; where the
file holds another stage's log, e.g. an evaluation of the same planner on more episodes, that log is kept and
this stage's goes beside it, named by its header's digest), then one line per answer: the round, the episode's
position among the stage's jobs, a digest of what it was asked (an answer is replayed only to the same
question) and the answer (a plan, or SayCan's scores). A line cut by a kill is dropped.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from textagents.jsonl import append_lines, append_records, read_jsonl


def question_digest(question: Any) -> str:
    """A short digest of what an episode was asked in a round (its messages; SayCan's context and commands)."""
    return hashlib.sha256(json.dumps(question, sort_keys=True, ensure_ascii=True).encode()).hexdigest()[:16]


class AnswerLog:
    """The answers of one stage, in ``path`` (or, where ``path`` holds another stage's log, beside it: ``path``
    is then the file used), for the stage described by ``header`` (JSON-serialisable)."""

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any]):
        self.path = Path(path)
        self.header = json.loads(json.dumps(header))  # as it reads back (tuples become lists)
        self._answers: dict[tuple[int, int], tuple[str, Any]] = {}
        records = read_jsonl(self.path)[0] if self.path.is_file() else []
        if records and records[0].get("header") != self.header:  # another stage's: kept
            self.path = self.path.with_name(f"{self.path.stem}-{question_digest(self.header)[:8]}{self.path.suffix}")
            records = read_jsonl(self.path)[0] if self.path.is_file() else []
        if records and records[0].get("header") == self.header:
            for record in records[1:]:
                self._answers[record["round"], record["episode"]] = (record["asked"], record["answer"])
            with self.path.open("rb") as log:
                log.seek(-1, os.SEEK_END)
                cut = log.read(1) != b"\n"
            if cut:  # by a kill: the next line starts on its own
                append_lines(self.path, ["\n"])
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_text(json.dumps({"header": self.header}) + "\n")
            os.replace(tmp, self.path)

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, round_number: int, episode: int, asked: str) -> Any | None:
        """The answer logged for ``episode`` in round ``round_number`` when it was asked ``asked``, else None."""
        logged = self._answers.get((round_number, episode))
        return logged[1] if logged is not None and logged[0] == asked else None

    def put(self, round_number: int, answers: dict[int, tuple[str, Any]]) -> None:
        """Log the answers of round ``round_number``: episode -> (what it was asked, the answer)."""
        records = [
            {"round": round_number, "episode": episode, "asked": asked, "answer": answer}
            for episode, (asked, answer) in answers.items()
        ]
        append_records(self.path, records)
        for episode, logged in answers.items():
            self._answers[round_number, episode] = logged
