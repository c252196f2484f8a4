"""A persistent on-disk response cache (sqlite: safe with several threads and processes writing at once)
and a backend wrapper that serves repeated requests from it."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import LLMBackend, Message, Sampling

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
    """Wraps a backend: answers ``generate``/``chat``/``score`` requests seen before from a ``ResponseCache``.

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

    def _cached(self, request: dict[str, Any], compute: Any) -> Any:
        key = self.cache.key({"model": self.model_name, **request})
        value = self.cache.get(key)
        if value is not None:
            self.usage.hit()
            return value
        value = compute()
        self.cache.put(key, value)
        return value

    def generate(self, prompts: Sequence[str], **sampling: Any) -> list[str]:
        settings = Sampling.of(**sampling)
        if not self._cacheable(settings):
            return self.backend.generate(prompts, **sampling)
        keys = [
            self.cache.key({"model": self.model_name, "kind": "generate", "prompt": p, **settings.as_dict()})
            for p in prompts
        ]
        found = [self.cache.get(k) for k in keys]
        for value in found:
            if value is not None:
                self.usage.hit()
        missing = [i for i, value in enumerate(found) if value is None]
        if missing:  # one batched call for every prompt not seen before
            for i, text in zip(missing, self.backend.generate([prompts[i] for i in missing], **sampling), strict=True):
                self.cache.put(keys[i], text)
                found[i] = text
        return found

    def chat(self, messages: Sequence[Message], **sampling: Any) -> str:
        settings = Sampling.of(**sampling)
        if not self._cacheable(settings):
            return self.backend.chat(messages, **sampling)
        request = {"kind": "chat", "messages": [dict(m) for m in messages], **settings.as_dict()}
        return self._cached(request, lambda: self.backend.chat(messages, **sampling))

    def score(self, contexts: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        request = {"kind": "score", "contexts": list(contexts), "candidates": [list(c) for c in candidates]}
        return self._cached(request, lambda: self.backend.score(contexts, candidates))
