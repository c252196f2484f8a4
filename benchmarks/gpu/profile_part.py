"""One part of ``check.py`` under cProfile: its set-up, on CUDA its warm-up iteration, and one timed iteration;
the 45 functions with the most time of their own and the 45 with the most in all. On CUDA the time of a kernel
shows where the CPU waited for the GPU, not where the kernel was launched.

    python benchmarks/gpu/profile_part.py glam_micro_batch_64 > $OUT/profile.txt   # on the GPU machine
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import check  # beside this file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=sorted(check.PARTS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny models")
    args = parser.parse_args()
    profile = cProfile.Profile()
    profile.enable()
    result = check.PARTS[args.part](args.device, float("inf"), args.quick, 1)
    profile.disable()
    print(result)
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(45)
        print(text.getvalue())


if __name__ == "__main__":
    main()
