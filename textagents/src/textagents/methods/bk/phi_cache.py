"""BK-Code's Φ by observation text, kept in the training process (the trusted side of the sandbox).

BK-Code's contract is Φ = f(observation text): the code is given the text alone, and a potential that keeps
state between calls is outside it (the labelling refuses code that answers a sample twice differently:
``code_potential.try_potential``). So a text evaluated once need not go back to the sandbox: on ELLM's
Crafter ~5 % of the observations a rollout scores are new. Values the code gave, and its errors and invalid
values (Φ = 0), are kept for up to ``max_entries`` texts, the least recently used dropped first; timeouts
and crashes are not (they depend on the machine's load and the process, not on the text), so such a text is
evaluated again next time, as without the cache.

``prefetch`` evaluates, in one round trip, the texts of a vectorised step's observations that are not kept
(``ppo.PrefetchPotentials`` calls it before the envs step); the calls that follow, until the next
``prefetch``, find them, failed ones included.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from textagents.methods.bk.sandbox import SandboxedPotential, observation_text

#: The evaluations a text's Φ is kept after: a value, or a failure that is a function of the text.
KEPT_FAILURES = (None, "errors", "invalid")


class CachedPotential:
    """``sandbox`` as a potential, with Φ kept for up to ``max_entries`` observation texts (0: none, every
    call goes to the sandbox). ``requests`` counts the calls, ``hits`` those answered without a new
    evaluation (from the cache or the last ``prefetch``)."""

    def __init__(self, sandbox: SandboxedPotential, max_entries: int):
        if max_entries < 0:
            raise ValueError(f"the cache's max_entries must be >= 0 (0: no cache), got {max_entries}")
        self.sandbox, self.max_entries = sandbox, max_entries
        self.cache: OrderedDict[str, float] = OrderedDict()
        self.prefetched: dict[str, float] = {}
        self.requests = 0
        self.hits = 0

    def __call__(self, obs: Any, info: dict[str, Any] | None = None) -> float:
        text = observation_text(obs)
        self.requests += 1
        if text in self.cache:
            self.hits += 1
            self.cache.move_to_end(text)
            return self.cache[text]
        if text in self.prefetched:
            self.hits += 1
            return self.prefetched[text]
        return self._evaluate([text])[0]

    def prefetch(self, observations: Sequence[Any]) -> None:
        """Evaluates the texts of ``observations`` that are not kept, in one request, for the calls that follow."""
        texts = [text for text in dict.fromkeys(map(observation_text, observations)) if text not in self.cache]
        self.prefetched = dict(zip(texts, self._evaluate(texts), strict=True)) if texts else {}

    def _evaluate(self, texts: list[str]) -> list[float]:
        evaluations = self.sandbox.evaluate(texts)
        if self.max_entries:
            for text, evaluation in zip(texts, evaluations, strict=True):
                if evaluation.failure in KEPT_FAILURES:
                    self.cache[text] = evaluation.value
            while len(self.cache) > self.max_entries:
                self.cache.popitem(last=False)
        return [evaluation.value for evaluation in evaluations]

    def metrics(self) -> dict[str, float]:
        return {"requests": self.requests, "cache_hits": self.hits, "cache_entries": len(self.cache)}
