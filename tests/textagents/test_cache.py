from __future__ import annotations

import multiprocessing

import pytest

from textagents.llm import CachedBackend, ResponseCache, TokenUsage


def _write_many(path: str, worker: int) -> None:
    cache = ResponseCache(path)
    for i in range(40):
        cache.put(cache.key({"worker": worker, "i": i}), {"text": f"{worker}-{i}"})
        cache.put(cache.key({"shared": i}), {"text": f"shared-{i}"})


def test_concurrent_writers_from_several_processes(tmp_path):
    path = str(tmp_path / "cache.sqlite")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_write_many, args=(path, w)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    cache = ResponseCache(path)
    assert len(cache) == 3 * 40 + 40
    assert cache.get(cache.key({"worker": 2, "i": 39})) == {"text": "2-39"}
    assert cache.get(cache.key({"missing": True})) is None


class CountingBackend:
    model_name = "counting"

    def __init__(self):
        self.usage = TokenUsage()
        self.calls = 0

    def generate(self, prompts, **sampling):
        self.calls += 1
        return [f"{p}!{self.calls}" for p in prompts]

    def chat(self, messages, **sampling):
        self.calls += 1
        return f"reply {self.calls}"

    def score(self, contexts, candidates):
        self.calls += 1
        return [[-float(len(c)) for c in options] for options in candidates]


def test_cached_backend_replays_deterministic_requests_across_instances(tmp_path):
    inner = CountingBackend()
    backend = CachedBackend(inner, ResponseCache(tmp_path / "c.sqlite"))
    first = backend.generate(["a", "b"], max_tokens=4)
    assert backend.generate(["a", "b"], max_tokens=4) == first
    assert backend.generate(["a"], max_tokens=5) != [first[0]]  # other settings, other entry
    assert backend.chat([{"role": "user", "content": "hi"}]) == backend.chat([{"role": "user", "content": "hi"}])
    assert backend.score(["ctx"], [[" x", " yy"]]) == [[-2.0, -3.0]]
    backend.score(["ctx"], [[" x", " yy"]])
    assert inner.calls == 4 and inner.usage.cache_hits == 4
    reopened = CachedBackend(CountingBackend(), ResponseCache(tmp_path / "c.sqlite"))
    assert reopened.generate(["a", "b"], max_tokens=4) == first


def test_sampled_requests_are_not_cached_unless_asked(tmp_path):
    inner = CountingBackend()
    backend = CachedBackend(inner, ResponseCache(tmp_path / "c.sqlite"))
    assert backend.generate(["a"], temperature=1.0) != backend.generate(["a"], temperature=1.0)
    assert backend.generate(["a"], temperature=1.0, seed=1) == backend.generate(["a"], temperature=1.0, seed=1)
    sampled = CachedBackend(inner, ResponseCache(tmp_path / "c.sqlite"), cache_sampled=True)
    assert sampled.generate(["z"], temperature=1.0) == sampled.generate(["z"], temperature=1.0)


class StoppingBackend(CountingBackend):
    """Answers one conversation at a time (as llama.cpp) and is stopped before its ``stop_at``-th answer."""

    def __init__(self, stop_at: int):
        super().__init__()
        self.stop_at = stop_at

    def chat(self, messages, **sampling):
        if self.calls + 1 == self.stop_at:
            raise RuntimeError("stopped")
        return super().chat(messages, **sampling)


def test_a_batch_stopped_halfway_keeps_the_answers_it_got_when_the_backend_answers_one_at_a_time(tmp_path):
    conversations = [[{"role": "user", "content": f"question {i}"}] for i in range(5)]
    path = tmp_path / "c.sqlite"
    stopped = StoppingBackend(stop_at=4)
    with pytest.raises(RuntimeError, match="stopped"):
        CachedBackend(stopped, ResponseCache(path)).chat_batch(conversations, seed=0)
    assert len(ResponseCache(path)) == 3
    again = StoppingBackend(stop_at=0)
    answers = CachedBackend(again, ResponseCache(path)).chat_batch(conversations, seed=0)
    assert answers == ["reply 1", "reply 2", "reply 3", "reply 1", "reply 2"] and again.calls == 2
