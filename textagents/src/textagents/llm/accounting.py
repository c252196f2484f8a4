"""Token accounting: prompt and completion tokens, requests and cache hits of a backend."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class TokenUsage:
    """Running totals; safe to update from several threads (the server's handlers share one backend)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cache_hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, prompt_tokens: int = 0, completion_tokens: int = 0, requests: int = 1) -> None:
        with self._lock:
            self.prompt_tokens += int(prompt_tokens)
            self.completion_tokens += int(completion_tokens)
            self.requests += requests

    def hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "requests": self.requests,
                "cache_hits": self.cache_hits,
            }
