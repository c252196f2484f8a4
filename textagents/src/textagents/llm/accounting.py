"""Token accounting: prompt and completion tokens, requests, cache hits and request latencies of a backend."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

#: Latency bins per doubling: the latencies in one bin are within 2 ** (1 / 16) - 1 = 4.4% of each other.
BINS_PER_DOUBLING = 16
#: Latencies below this (a clock tick) share the lowest bin.
MIN_LATENCY_S = 1e-6


def latency_bin(seconds: float) -> int:
    """The log-spaced bin of a latency: ``floor(log2(seconds) * BINS_PER_DOUBLING)``."""
    return math.floor(math.log2(max(seconds, MIN_LATENCY_S)) * BINS_PER_DOUBLING)


@dataclass
class LatencyHistogram:
    """Request latencies counted in log-spaced bins (``latency_bin``), each with the sum of its latencies: a
    few dozen numbers however many requests an episode makes, added up exactly across episodes, percentiles
    within 4.4% (exact when the latencies of a bin are equal)."""

    counts: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)

    def add(self, seconds: float, count: int = 1) -> None:
        if count > 0:
            index = latency_bin(seconds)
            self.counts[index] = self.counts.get(index, 0) + count
            self.seconds[index] = self.seconds.get(index, 0.0) + seconds * count

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def copy(self) -> LatencyHistogram:
        return LatencyHistogram(dict(self.counts), dict(self.seconds))

    def since(self, earlier: LatencyHistogram) -> LatencyHistogram:
        """The latencies added after ``earlier``, a copy of this histogram taken before."""
        later = {k: n - earlier.counts.get(k, 0) for k, n in self.counts.items()}
        return LatencyHistogram(
            {k: n for k, n in later.items() if n},
            {k: self.seconds[k] - earlier.seconds.get(k, 0.0) for k, n in later.items() if n},
        )

    def percentile(self, q: float) -> float | None:
        """The nearest-rank ``q``-th percentile (0 < q <= 100): the mean latency of its bin; None when empty."""
        if not 0 < q <= 100:
            raise ValueError(f"percentile q must be in (0, 100], got {q}")
        total = self.total
        if total == 0:
            return None
        rank = math.ceil(q / 100 * total)
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return self.seconds[index] / self.counts[index]
        raise AssertionError("unreachable: the ranks end at the total")

    def to_json(self) -> dict[str, list[float]]:
        """``{bin: [count, seconds]}``."""
        return {str(k): [n, self.seconds[k]] for k, n in sorted(self.counts.items())}

    @classmethod
    def from_json(cls, data: Mapping[str, Sequence[float]]) -> LatencyHistogram:
        return cls({int(k): int(n) for k, (n, _) in data.items()}, {int(k): float(s) for k, (_, s) in data.items()})

    @classmethod
    def merged(cls, histograms: Iterable[LatencyHistogram]) -> LatencyHistogram:
        merged = cls()
        for histogram in histograms:
            for index, count in histogram.counts.items():
                merged.counts[index] = merged.counts.get(index, 0) + count
                merged.seconds[index] = merged.seconds.get(index, 0.0) + histogram.seconds[index]
        return merged


@dataclass
class TokenUsage:
    """Running totals; safe to update from several threads (the server's handlers share one backend).
    ``latency`` holds the wall time of each request that said how long it took."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cache_hits: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self, prompt_tokens: int = 0, completion_tokens: int = 0, requests: int = 1, seconds: float | None = None
    ) -> None:
        """Count ``requests`` requests; with ``seconds``, each of them took that long (a batch's requests all
        wait for the batch)."""
        with self._lock:
            self.prompt_tokens += int(prompt_tokens)
            self.completion_tokens += int(completion_tokens)
            self.requests += requests
            if seconds is not None:
                self.latency.add(seconds, requests)

    def hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def latency_copy(self) -> LatencyHistogram:
        with self._lock:
            return self.latency.copy()

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "requests": self.requests,
                "cache_hits": self.cache_hits,
            }
