"""The trajectory viewer in a real headless browser (Chromium), not in CI.

Plays a small suite (random and expert agents on BabyAI-Text, Crafter-Text, fastsim and Housekeep, with
``--trajectories``), writes its site with ``textagents bench view --video gif``, then opens it in headless
Chromium:

- the index, filtered by its address (``#agent=expert&success=1``): the DOM after the page's script ran shows
  only the expert's successful episodes and says how many; the screenshot shows green "success" badges and no
  red "failure" badge (the filter hid those rows), and the filter bar;
- one episode page: the DOM holds one row per step plus the end state; the screenshot holds the episode's
  first frame pixel for pixel (found in the screenshot) and its badges.

Writes ``benchmarks/results/viewer_browser_check.json`` and the screenshots ``docs/images/bench_view_index.png``
and ``docs/images/bench_view_episode.png`` (used in docs/bench.md). Exits 1 when a check fails.
Needs Chromium: ``apt-get install -y chromium`` (Debian). Run: ``python benchmarks/viewer/browser_check.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from textenvs.core.files import write_bytes_atomic

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "viewer_browser_check.json"
IMAGES = ROOT / "docs" / "images"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
SUITE = """\
name: viewer-check
description: random and expert agents on four families, for the viewer's browser check
seeds: {start: 0, count: 3}
max_steps: 120
envs:
  - id: BabyAI-Text-GoToRedBallGrey-v0
  - id: Crafter-Text-MakeWoodPickaxe-v0
  - id: Fastsim-Text-Household-v0
  - id: Housekeep-Text-v0
agents:
  - {name: random, kind: random}
  - {name: expert, kind: expert}
"""
SUCCESS_GREEN = (0x1A, 0x7F, 0x37)
FAILURE_RED = (0xCF, 0x22, 0x2E)
FILTER_BLUE = (0xEE, 0xF4, 0xFF)


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    sys.exit(f"no headless browser found (tried {', '.join(BROWSERS)}): apt-get install -y chromium")


def chromium(binary: str, *args: str) -> str:
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-color-profile=srgb"]
    command += ["--force-device-scale-factor=1", "--virtual-time-budget=3000", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=120).stdout


def screenshot(binary: str, url: str, path: Path, size: tuple[int, int]) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        shot = Path(tmp) / "shot.png"
        chromium(binary, f"--window-size={size[0]},{size[1]}", f"--screenshot={shot}", url)
        image = Image.open(shot).convert("RGB")
        buffer = shot.read_bytes()
    write_bytes_atomic(path, buffer)
    return np.asarray(image)


def pixels_of(image: np.ndarray, colour: tuple[int, int, int]) -> int:
    return int(np.all(image == np.array(colour, np.uint8), axis=-1).sum())


def find(image: np.ndarray, template: np.ndarray) -> tuple[int, int] | None:
    """Where ``template`` lies in ``image`` pixel for pixel (top-left row, column), or None."""
    height, width = template.shape[:2]
    first = template[0].tobytes()
    for y in range(image.shape[0] - height + 1):
        row = image[y].tobytes()
        start = row.find(first)
        while start != -1:
            if start % 3 == 0:
                x = start // 3
                if np.array_equal(image[y : y + height, x : x + width], template):
                    return y, x
            start = row.find(first, start + 1)
    return None


def run(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=cwd)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="where the run and its site go (default: a temporary folder)")
    args = parser.parse_args()
    binary = browser()
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="viewer-check-"))
    work.mkdir(parents=True, exist_ok=True)
    suite, run_dir = work / "suite.yaml", work / "run"
    suite.write_text(SUITE)
    bench = [sys.executable, "-m", "textagents.cli", "bench"]
    seconds = {
        "bench_run": run([*bench, "run", suite.name, "--out", run_dir.name, "--trajectories", "--no-progress"], work),
        "bench_view": run([*bench, "view", run_dir.name, "--video", "gif", "--no-progress"], work),
    }
    run([*bench, "report", run_dir.name, "--no-plots"], work)
    site = run_dir / "view"
    records = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    checks: dict[str, Any] = {}

    # The index, filtered through its address: the script must hide every other row.
    expert_wins = [r for r in records if r["agent"] == "expert" and r["success"]]
    index_url = (site / "index.html").as_uri() + "#agent=expert&success=1"
    dom = chromium(binary, "--dump-dom", index_url)
    rows = re.findall(r"<tr data-agent=[^>]*>", dom)
    shown = [r for r in rows if "hidden" not in r]
    checks["index_rows"] = len(rows) == len(records)
    checks["index_filtered_rows"] = len(shown) == len(expert_wins) and all('data-success="1"' in r for r in shown)
    checks["index_count_text"] = f"{len(expert_wins)} of {len(records)} episodes shown" in dom
    checks["index_filter_controls"] = all(f'id="f-{k}"' in dom for k in ("agent", "env", "success"))
    index_shot = screenshot(binary, index_url, IMAGES / "bench_view_index.png", (1100, 760))
    checks["index_shot_success_badges"] = pixels_of(index_shot, SUCCESS_GREEN) > 200
    checks["index_shot_no_failure_badge"] = pixels_of(index_shot, FAILURE_RED) == 0
    checks["index_shot_filter_bar"] = pixels_of(index_shot, FILTER_BLUE) > 5000

    # One episode page: every step in the DOM, the first frame in the screenshot.
    episode = next(r for r in records if r["agent"] == "expert" and r["env"].startswith("BabyAI") and r["success"])
    page = site / "episodes" / episode["agent"] / episode["env"] / f"{episode['seed']}.html"
    dom = chromium(binary, "--dump-dom", page.as_uri())
    checks["episode_rows"] = len(re.findall(r'<tr (?:class="end" )?id="step-', dom)) == episode["steps"] + 1
    frames = site / "frames" / episode["agent"] / episode["env"] / str(episode["seed"])
    frame = np.asarray(Image.open(frames / "00000.png").convert("RGB"))
    episode_shot = screenshot(binary, page.as_uri(), IMAGES / "bench_view_episode.png", (1100, 900))
    checks["episode_shot_first_frame"] = find(episode_shot, frame) is not None
    checks["episode_shot_success_badge"] = pixels_of(episode_shot, SUCCESS_GREEN) > 100

    leaderboard = (run_dir / "leaderboard.md").read_text()
    checks["leaderboard_links_viewer"] = "[view/index.html](view/index.html)" in leaderboard
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    result = {
        "benchmark": "viewer_browser_check",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "browser": subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip(),
        "episodes": len(records),
        "site_bytes": size,
        "site_files": sum(1 for p in site.rglob("*") if p.is_file()),
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "screenshot_bytes": {p.name: p.stat().st_size for p in sorted(IMAGES.glob("bench_view_*.png"))},
        "checks": checks,
        "passed": all(checks.values()),
    }
    write_bytes_atomic(RESULT, (json.dumps(result, indent=2) + "\n").encode())
    print(json.dumps(result, indent=2))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
