"""Thread settings while training: one small pool of torch threads, no tokenizer pool on top of it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

#: Torch threads while training. SB3's networks are small and see a few observations at a time (the SBERT
#: featurizer a sentence or two): more threads mostly wait for each other and for the envs.
TRAIN_THREADS = 1


@contextlib.contextmanager
def training_threads(threads: int | None = TRAIN_THREADS) -> Iterator[None]:
    """Within the block, torch uses ``threads`` intra-op threads (None: as it is) and the tokenizers (SBERT's)
    do not start their own thread pool unless ``TOKENIZERS_PARALLELISM`` says otherwise; torch's thread count
    is restored afterwards."""
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise ValueError(f"threads={threads!r} is not valid; use a positive int or None (torch's setting)")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
