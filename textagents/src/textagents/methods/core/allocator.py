"""The C allocator's settings for a training process (glibc only): freed memory kept for reuse.

A DQN update allocates and frees tens of MB of tensors (the batch, activations, gradients, Adam's temporaries).
glibc hands blocks from 128 kB to a few MB back to the kernel when they are freed (mapped ones at once, the
heap's top beyond its trim threshold), so the next update faults the same pages in again: on the 2-core
machine an ELLM update at cpu.yaml's sizes took ~4,500 page faults and spent ~11% of its CPU time in the
kernel. Served from a heap that is not trimmed, the pages are reused; the numbers computed do not change,
and the process keeps its peak memory.
"""

from __future__ import annotations

import ctypes
import os
import platform

#: ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's largest mmap threshold on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``): blocks below it come
#: from the heap.
MMAP_THRESHOLD = 32 * 2**20
#: Free memory at the heap's top kept before any is given back.
TRIM_THRESHOLD = 2**30
#: glibc's own environment variables for the two settings: when either is set, the user's choice stands.
ENVIRONMENT = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Serve blocks below ``mmap_threshold`` bytes from the heap and trim it only beyond ``trim_threshold``
    free bytes, for the rest of the process. True if both were set; False where the C library is not glibc,
    where the environment sets either, or where glibc refused a value. The trim threshold is set only after the
    mmap threshold: set alone, it would fix the mmap threshold at its 128 kB start, and every larger block
    would be mapped afresh."""
    if platform.libc_ver()[0] != "glibc" or any(name in os.environ for name in ENVIRONMENT):
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(M_TRIM_THRESHOLD, trim_threshold))
