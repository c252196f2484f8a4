"""Startup: the seconds a fresh interpreter takes for ``textagents --help``, ``import textenvs`` and the example
smoke run up to its first environment step, in this checkout ("new") and in a worktree of an older commit
("base"), alternated round by round (the order swapped every round) after both trees' sources are compiled
(``compileall``: no round writes ``.pyc`` files); medians over the rounds and the median per-round ratio
base / new.
Also what the new smoke run still imports before its first step: ``-X importtime``'s self time summed per
top-level package.

The base is a worktree of the commit before the lazy imports:

    git worktree add --detach /tmp/startup-base 77016ee
    python benchmarks/perf/perf_startup.py --base /tmp/startup-base   # about a minute
    git worktree remove /tmp/startup-base

Writes ``benchmarks/results/startup.json``, with the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import write_result

NEW = Path(__file__).resolve().parents[2]
SMOKE = "benchmarks/methods/example/smoke.yaml"

#: The console script's own lines (``textagents`` in a venv's bin).
HELP = "import sys; from textagents.cli import main; sys.argv = ['textagents', '--help']; sys.exit(main())"
IMPORT_TEXTENVS = "import textenvs"
#: The example smoke run, stopped at its first ``env.step`` (exit status 0; 3 if it never stepped).
FIRST_STEP = """
import os, sys
import textenvs.core.text_env as text_env

def first_step(self, action):
    os._exit(0)

text_env.TextEnv.step = first_step
from textagents.cli import main
main(["method", "run", "example", {smoke!r}, "--out", sys.argv[1], "--no-progress"])
os._exit(3)
"""
CASES = {
    "help": "textagents --help",
    "import_textenvs": "python -c 'import textenvs'",
    "smoke_first_step": f"textagents method run example {SMOKE}, up to its first env.step",
}


def environment(tree: Path) -> dict[str, str]:
    """This process's environment with ``tree``'s sources first on the path."""
    path = os.pathsep.join(str(tree / package / "src") for package in ("textenvs", "textagents"))
    return {**os.environ, "PYTHONPATH": path}


def command(case: str, out: Path) -> list[str]:
    if case == "help":
        return [sys.executable, "-c", HELP]
    if case == "import_textenvs":
        return [sys.executable, "-c", IMPORT_TEXTENVS]
    return [sys.executable, "-c", FIRST_STEP.format(smoke=SMOKE), str(out)]


def run(case: str, tree: Path, extra: tuple[str, ...] = ()) -> tuple[float, str]:
    """Seconds from the start of the interpreter to its exit, and its stderr."""
    out = Path(tempfile.mkdtemp(prefix="perf-startup-"))
    args = command(case, out / "run")
    try:
        start = time.perf_counter()
        result = subprocess.run(
            [args[0], *extra, *args[1:]], cwd=tree, env=environment(tree), capture_output=True, text=True
        )
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if result.returncode != 0:
        raise SystemExit(f"{case} in {tree} failed (status {result.returncode}): {result.stderr[-2000:]}")
    return seconds, result.stderr


def import_seconds(stderr: str, top: int = 12) -> dict[str, float]:
    """``-X importtime``'s self time summed per top-level package, the ``top`` largest."""
    per_package: Counter[str] = Counter()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line.removeprefix("import time:").split("|")
            per_package[name.strip().partition(".")[0]] += int(self_us)
    return {name: round(us / 1e6, 3) for name, us in per_package.most_common(top)}


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="a worktree of the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of every case in each tree")
    args = parser.parse_args()
    base = args.base.resolve()
    if not (base / "textagents" / "src" / "textagents" / "cli.py").is_file():
        parser.error(f"{base} is not a checkout of this repository (make one with git worktree add)")
    load_start = os.getloadavg()
    for tree in (base, NEW):  # the .pyc files, so that no round compiles sources
        sources = [str(tree / package / "src") for package in ("textenvs", "textagents")]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *sources], check=True)
    times: dict[str, dict[str, list[float]]] = {case: {"base": [], "new": []} for case in CASES}
    for round_index in range(args.rounds):
        order = [("base", base), ("new", NEW)][:: 1 if round_index % 2 == 0 else -1]
        for case in CASES:
            for name, tree in order:
                times[case][name].append(run(case, tree)[0])
    _, importtime = run("smoke_first_step", NEW, ("-X", "importtime"))
    load_end = os.getloadavg()
    cases = {}
    for case, measured in times.items():
        ratios = [b / n for b, n in zip(measured["base"], measured["new"], strict=True)]
        cases[case] = {
            "what": CASES[case],
            "base_s": [round(s, 3) for s in measured["base"]],
            "new_s": [round(s, 3) for s in measured["new"]],
            "base_median_s": round(statistics.median(measured["base"]), 3),
            "new_median_s": round(statistics.median(measured["new"]), 3),
            "ratio_base_to_new": round(statistics.median(ratios), 2),
        }
    result = {
        "base_commit": git(base, "rev-parse", "--short", "HEAD"),
        "new_commit": git(NEW, "rev-parse", "--short", "HEAD"),
        "rounds": args.rounds,
        "load_average_at_start": [round(v, 2) for v in load_start],
        "load_average_at_end": [round(v, 2) for v in load_end],
        "cases": cases,
        "smoke_first_step_imports_s": import_seconds(importtime),
    }
    path = write_result("startup", result)
    for case, numbers in cases.items():
        print(
            f"{case}: base {numbers['base_median_s']:.2f} s, new {numbers['new_median_s']:.2f} s, "
            f"ratio {numbers['ratio_base_to_new']:.2f}"
        )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
