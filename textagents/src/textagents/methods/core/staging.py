"""Host-to-device copies that do not wait. A copy from ordinary (pageable) host memory to a GPU waits for all the
work queued on the device before it; numpy arrays copied here go through pinned host buffers with
``non_blocking``, so the CPU goes on while the GPU works. A buffer is written again only once its last copy has
run (a CUDA event per buffer)."""

from __future__ import annotations

import numpy as np
import torch

#: A pinned buffer (its numpy view and its tensor) and the event recorded after its last copy.
_Slot = tuple[np.ndarray, torch.Tensor, torch.cuda.Event]
_Key = tuple[tuple[int, ...], np.dtype]


class PinnedStaging:
    """Copies numpy arrays to ``device`` through rings of ``slots`` pinned buffers, one ring per shape and
    dtype. On a device other than CUDA a copy is a plain one."""

    def __init__(self, device: torch.device | str, slots: int = 8):
        self.device, self.slots = torch.device(device), slots
        self._rings: dict[_Key, list[_Slot]] = {}
        self._next: dict[_Key, int] = {}

    def copy(self, array: np.ndarray, out: torch.Tensor | None = None) -> torch.Tensor:
        """``array`` on the device: copied into ``out`` (cast to its dtype on the host, as numpy casts) or into
        a new tensor of its own dtype. On CUDA the copy may still be running when this returns; work queued
        after it on the same stream sees it done."""
        array = np.asarray(array)
        if self.device.type != "cuda":
            tensor = torch.as_tensor(array)
            return tensor.to(self.device) if out is None else out.copy_(tensor)
        dtype = array.dtype if out is None else torch.empty(0, dtype=out.dtype).numpy().dtype
        host, pinned, done = self._slot(array.shape, dtype)
        done.synchronize()  # this buffer's last copy has run
        np.copyto(host, array, casting="unsafe")
        if out is None:
            out = torch.empty(pinned.shape, dtype=pinned.dtype, device=self.device)
        out.copy_(pinned, non_blocking=True)
        done.record()
        return out

    def _slot(self, shape: tuple[int, ...], dtype: np.dtype) -> _Slot:
        key = (tuple(shape), np.dtype(dtype))
        if key not in self._rings:
            ring = []
            for _ in range(self.slots):
                pinned = torch.from_numpy(np.empty(shape, dtype)).pin_memory()
                ring.append((pinned.numpy(), pinned, torch.cuda.Event()))
            self._rings[key], self._next[key] = ring, 0
        index = self._next[key]
        self._next[key] = (index + 1) % self.slots
        return self._rings[key][index]
