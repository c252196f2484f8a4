"""``PinnedStaging``: what arrives on the device is the array given, cast as numpy casts, even when a ring's
buffers are written again while earlier copies are queued (CUDA, where there is a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from textagents.methods.core.staging import PinnedStaging


def test_on_the_cpu_a_copy_is_the_array_and_out_takes_its_cast():
    staging = PinnedStaging("cpu")
    array = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
    assert torch.equal(staging.copy(array), torch.from_numpy(array))
    out = torch.zeros(2, 3, dtype=torch.float16)
    staging.copy(array, out=out)
    assert torch.equal(out, torch.from_numpy(array.astype(np.float16)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_queued_copies_through_a_small_ring_each_arrive_whole():
    staging = PinnedStaging("cuda", slots=2)
    big = torch.randn(2048, 2048, device="cuda")
    arrays = [np.full((64, 84, 84, 4), k, np.uint8) for k in range(20)]
    out = torch.zeros(20, 64, 84, 84, 4, dtype=torch.uint8, device="cuda")
    texts = torch.zeros(20, 384, dtype=torch.float16, device="cuda")
    for k, array in enumerate(arrays):
        big = big @ big / 2048  # keeps the stream busy, so copies queue behind it
        staging.copy(array, out=out[k])
        staging.copy(np.full(384, k / 3, np.float32), out=texts[k])
    fresh = staging.copy(arrays[7])
    torch.cuda.synchronize()
    assert all(bool((out[k] == k).all()) for k in range(20)) and bool((fresh == 7).all())
    expected = torch.tensor(np.array([np.full(384, k / 3, np.float32).astype(np.float16) for k in range(20)]))
    assert torch.equal(texts.cpu(), expected)
