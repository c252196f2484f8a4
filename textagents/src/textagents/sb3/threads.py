"""Thread settings while training: one small pool of torch threads, no tokenizer pool on top of it."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

#: Torch threads while training. SB3's networks are small and see a few observations at a time (the SBERT
#: featurizer a sentence or two): more threads mostly wait for each other and for the envs.
TRAIN_THREADS = 1


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``callback(module)`` once the module ``name`` has been imported, before the import returns."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]):
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once; the other finders find the module
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_call(module: ModuleType) -> None:
            exec_module(module)
            self.callback(module)

        spec.loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec


@contextlib.contextmanager
def training_threads(threads: int | None = TRAIN_THREADS) -> Iterator[None]:
    """Within the block, torch uses ``threads`` intra-op threads (None: as it is) and the tokenizers (SBERT's)
    do not start their own thread pool unless ``TOKENIZERS_PARALLELISM`` says otherwise; torch's thread count
    is restored afterwards. Torch is not imported for this: if the block imports it, the count is set as the
    import ends (a method that never uses torch does not pay for its import)."""
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise ValueError(f"threads={threads!r} is not valid; use a positive int or None (torch's setting)")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    before: list[int] = []

    def set_threads(torch: Any) -> None:
        before.append(torch.get_num_threads())
        if threads is not None:
            torch.set_num_threads(threads)

    hook = None
    if "torch" in sys.modules:
        set_threads(sys.modules["torch"])
    else:
        hook = _AfterImport("torch", set_threads)
        sys.meta_path.insert(0, hook)
    try:
        yield
    finally:
        if hook is not None and hook in sys.meta_path:
            sys.meta_path.remove(hook)
        if before:
            sys.modules["torch"].set_num_threads(before[0])
