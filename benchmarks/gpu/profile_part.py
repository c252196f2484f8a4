"""One part of ``check.py`` under a profiler.

``--profiler cprofile`` (default): after the warm-up iteration, ``--steps`` timed ones (set-up and warm-up are
not profiled); the 45 functions with the most time of their own and the 45 with the most in all. On CUDA the
time of a kernel or a copy shows where the CPU waited for the GPU, not where the kernel was launched.

``--profiler torch``: after the warm-up iteration, one iteration under ``torch.profiler``: on CUDA its kernels
alone (recording every CPU operator too made the summary outlast a GPU session): the iteration's wall time, the
GPU's busy time (its kernels' time summed) and their ratio, the kernel launches, and the 40 kernels with the
most time; on the CPU its operators. A low ratio says the GPU waits for the CPU to launch its kernels.

    python benchmarks/gpu/profile_part.py glam_batch_32 --profiler torch --frames-per-env 1 > $OUT/profile.txt
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import check  # beside this file


def cprofiled(step: Callable[[], int], device: str, budget_s: float, max_steps: int) -> tuple[int, float, int]:
    """``check.timed``'s stand-in: a warm-up step, then ``max_steps`` steps under cProfile, summarised."""
    step()
    cuda = torch.device(device).type == "cuda"
    profile = cProfile.Profile()
    if cuda:
        torch.cuda.synchronize()
    profile.enable()
    start = time.perf_counter()
    units = sum(step() for _ in range(max_steps))
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    profile.disable()
    print(f"{max_steps} steps in {seconds:.3f} s, {units} units ({units / seconds:.1f} a second, under cProfile)")
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(45)
        print(text.getvalue())
    return units, seconds, max_steps


def torch_profiled(step: Callable[[], int], device: str, budget_s: float, max_steps: int) -> tuple[int, float, int]:
    """``check.timed``'s stand-in: a warm-up step, then one step under ``torch.profiler``, summarised."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    step()
    cuda = torch.device(device).type == "cuda"
    activities = [ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        units = step()
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    if cuda:
        print(f"peak GPU memory in the iteration: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    events = prof.key_averages()
    if cuda:
        kernels = [e for e in events if e.device_type == DeviceType.CUDA]
        busy_s = sum(e.self_device_time_total for e in kernels) / 1e6
        launches = sum(e.count for e in kernels)
        print(f"iteration {seconds:.2f} s, {units} units; GPU kernels {busy_s:.2f} s ({busy_s / seconds:.0%} busy)")
        print(f"{launches} kernel launches, {1e6 * seconds / max(launches, 1):.1f} µs of the iteration each")
    else:
        operators = sum(e.count for e in events if e.key.startswith("aten::"))
        print(f"iteration {seconds:.2f} s, {units} units; {operators} aten operator calls")
    sort = "self_device_time_total" if cuda else "self_cpu_time_total"
    print(events.table(sort_by=sort, row_limit=40, max_name_column_width=60))
    return units, seconds, 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=sorted(check.PARTS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--profiler", choices=["cprofile", "torch"], default="cprofile")
    parser.add_argument("--quick", action="store_true", help="tiny models")
    parser.add_argument("--frames-per-env", type=int, help="GLAM's parts: frames an iteration (a shorter profile)")
    parser.add_argument("--steps", type=int, default=1, help="cprofile: timed steps profiled (default 1)")
    args = parser.parse_args()
    part = check.PARTS[args.part]
    if args.frames_per_env:
        part = functools.partial(part, frames_per_env=args.frames_per_env)
    check.timed = torch_profiled if args.profiler == "torch" else cprofiled
    print(part(args.device, float("inf"), args.quick, args.steps if args.profiler == "cprofile" else 1))


if __name__ == "__main__":
    main()
