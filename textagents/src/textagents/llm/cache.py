"""A persistent on-disk response cache (sqlite: safe with several threads and processes writing at once)
and a backend wrapper that serves repeated requests from it."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import LLMBackend, Message, Sampling, chat_batch

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


class ResponseCache:
    """Key -> JSON value in one sqlite file (WAL journal, busy timeout); each call uses its own connection,
    so threads and processes can share the file; a write is one transaction (never half-written)."""

    def __init__(self, path: str | os.PathLike[str], timeout_s: float = 60.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.timeout_s = timeout_s
        with closing(self._connect()) as db, db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=self.timeout_s)

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        """A stable key for a request: sha256 of its canonical JSON."""
        return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=True).encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        with closing(self._connect()) as db, db:
            db.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def __len__(self) -> int:
        with closing(self._connect()) as db:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


class CachedBackend:
    """Wraps a backend: answers ``generate``/``chat``/``chat_batch``/``score`` requests seen before from a
    ``ResponseCache``; the requests of a batch not seen before go to the backend as one batch.

    Sampled requests (``temperature > 0`` without a ``seed``) are not cached unless ``cache_sampled`` —
    replaying one sample forever would silently make a stochastic policy deterministic.
    """

    def __init__(self, backend: LLMBackend, cache: ResponseCache, cache_sampled: bool = False):
        self.backend = backend
        self.cache = cache
        self.cache_sampled = cache_sampled
        self.model_name = backend.model_name

    @property
    def usage(self) -> TokenUsage:
        return self.backend.usage

    def _cacheable(self, sampling: Sampling) -> bool:
        return self.cache_sampled or sampling.temperature == 0 or sampling.seed is not None

    def _lookup(self, requests: list[dict[str, Any]], compute: Callable[[list[int]], list[Any]]) -> list[Any]:
        """The answer to each request: from the cache, else from one ``compute(missing)`` call for the
        indices of every request not seen before (so a batch of misses stays one batch)."""
        keys = [self.cache.key({"model": self.model_name, **request}) for request in requests]
        found = [self.cache.get(key) for key in keys]
        for value in found:
            if value is not None:
                self.usage.hit()
        missing = [i for i, value in enumerate(found) if value is None]
        if missing:
            for i, value in zip(missing, compute(missing), strict=True):
                self.cache.put(keys[i], value)
                found[i] = value
        return found

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        settings = Sampling.of(**sampling)
        if not self._cacheable(settings):
            return self.backend.generate(prompts, **sampling)
        requests = [{"kind": "generate", "prompt": p, **settings.as_dict()} for p in prompts]
        return self._lookup(requests, lambda missing: self.backend.generate([prompts[i] for i in missing], **sampling))

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        return self.chat_batch([messages], **sampling)[0]

    def chat_batch(self, conversations: Sequence[Sequence[Message]], **sampling: Any) -> list[str]:
        """Answers seen before from the cache; the other conversations in one ``chat_batch`` of the backend, or,
        when it answers one conversation at a time (llama.cpp), each kept as soon as it comes, so that a batch
        stopped halfway loses none of the answers already paid for."""
        if len(conversations) > 1 and getattr(self.backend, "chat_batch", None) is None:
            return [self.chat_batch([messages], **sampling)[0] for messages in conversations]
        settings = Sampling.of(**sampling)
        if not self._cacheable(settings):
            return chat_batch(self.backend, conversations, **sampling)
        requests = [{"kind": "chat", "messages": [dict(m) for m in c], **settings.as_dict()} for c in conversations]
        return self._lookup(
            requests, lambda missing: chat_batch(self.backend, [conversations[i] for i in missing], **sampling)
        )

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        request = {"kind": "score", "contexts": list(contexts), "candidates": [list(c) for c in candidates]}
        return self._lookup([request], lambda _: [self.backend.score(contexts, candidates)])[0]
