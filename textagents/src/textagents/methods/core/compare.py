"""One method, one config, several values of one setting (an agent, a goal source ...) and several seeds:
one resumable run each, then ``comparison.md`` and ``comparison.png`` with the method's curves (mean ± std
over seeds) per value. ``textagents method compare METHOD CONFIG --out DIR --vary KEY=V1,V2 --seeds 0 1``
(``--set KEY=VALUE`` changes a setting of the config for every run); the same command again skips finished
runs and resumes unfinished ones (with a larger ``iterations``, it extends the finished ones)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from textagents.bench.store import write_text_atomic
from textagents.methods.core.config import ConfigError, load_config, read_config_file
from textagents.methods.core.run_dir import CONFIG_FILE, RunDir
from textagents.methods.registry import method_class
from textenvs.core.messages import short_repr
from textenvs.data import parse_yaml


def parse_setting(text: str, flag: str = "--set") -> tuple[str, Any]:
    """``"temperature=0"`` -> ``("temperature", 0)`` (the value read as YAML: ``textenvs.data.parse_yaml``);
    ``flag`` names the option in the error."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"{flag} {short_repr(text)}: expected KEY=VALUE")
    return key, parse_yaml(value, f"{flag} {short_repr(key)}")


def parse_vary(text: str) -> tuple[str, list[Any]]:
    """``"agent=glam,drrn"`` -> ``("agent", ["glam", "drrn"])`` (each value read as YAML: numbers stay numbers)."""
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise ConfigError(f"--vary {short_repr(text)}: expected KEY=VALUE1,VALUE2")
    return key, [parse_yaml(v, f"--vary {short_repr(key)}") for v in values.split(",")]


_UNSAFE_IN_NAMES = re.compile(r"[^\w.,+=-]")


def run_name(key: str, value: Any, seed: int) -> str:
    """The folder of one run of a comparison: ``KEY=VALUE_seedN``, with each character of the value that a
    folder name cannot hold (a path's ``/``, say) written as ``_``."""
    return f"{key}={_UNSAFE_IN_NAMES.sub('_', str(value))}_seed{seed}"


def run_comparison(
    method: str,
    config_path: str | Path,
    out: str | Path,
    key: str,
    values: Sequence[Any],
    seeds: Sequence[int],
    llm: Any = None,
    progress: bool = True,
    settings: dict[str, Any] | None = None,
    unsafe_local_exec: bool = False,
) -> Path:
    from textagents.methods.core.runner import run_method

    cls = method_class(method)
    base = {**read_config_file(config_path), **(settings or {})}
    out = Path(out)
    configs = out / "configs"
    configs.mkdir(parents=True, exist_ok=True)
    names = {run_name(key, value, 0) for value in values}
    if len(names) < len(set(map(str, values))):
        raise ConfigError(f"--vary {key}: values that differ only in characters a folder name cannot hold")
    runs = []
    for value in values:
        for seed in seeds:
            name = run_name(key, value, seed)
            path = configs / f"{name}.yaml"
            path.write_text(yaml.safe_dump({**base, key: value, "seed": seed}, sort_keys=False))
            iterations = load_config(cls.config_class, path).iterations  # every config checked first
            runs.append((name, path, iterations))
    for name, path, iterations in runs:
        run_dir = out / name
        if (run_dir / "report.md").is_file() and RunDir(run_dir).recorded()["config"]["iterations"] >= iterations:
            continue  # finished (a larger `iterations` extends it)
        resume = (run_dir / CONFIG_FILE).is_file()  # started: from its checkpoint, or from 0 when a kill left none
        run_method(
            method, path, run_dir, resume=resume, llm=llm, progress=progress, unsafe_local_exec=unsafe_local_exec
        )
    return write_comparison(out, method, key, values, seeds)


def write_comparison(out: Path, method: str, key: str, values: Sequence[Any], seeds: Sequence[int]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cls = method_class(method)
    panels: dict[str, dict[str, list[list[tuple[float, float]]]]] = {}
    for value in values:
        for seed in seeds:
            path = out / run_name(key, value, seed) / "metrics.jsonl"
            if not path.is_file():
                continue
            records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            for panel, points in cls.comparison_curves(records).items():
                panels.setdefault(panel, {}).setdefault(str(value), []).append(points)
    figure, axes = plt.subplots(1, max(1, len(panels)), figsize=(5.5 * max(1, len(panels)), 3.8), squeeze=False)
    lines = [f"# {method}: {key} compared", "", f"Seeds: {list(seeds)}; mean ± standard deviation over seeds.", ""]
    for ax, (panel, by_value) in zip(axes[0], panels.items(), strict=False):
        lines += [f"## {panel}", "", f"| {key} | x | mean ± std |", "|---|---:|---:|"]
        for value, runs in by_value.items():
            xs, mean, std = mean_curve(runs)
            ax.plot(xs, mean, "o-", label=f"{value} ({len(runs)} seeds)", markersize=3)
            ax.fill_between(xs, mean - std, mean + std, alpha=0.2)
            lines += [f"| {value} | {x:,.0f} | {m:.3f} ± {s:.3f} |" for x, m, s in zip(xs, mean, std, strict=True)]
        lines.append("")
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel(cls.comparison_x)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "comparison.png", dpi=110)
    plt.close(figure)
    lines.append("![the curves](comparison.png)")
    path = out / "comparison.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def mean_curve(runs: list[list[tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The x values every run reached, with the mean and standard deviation of y there."""
    common = sorted(set.intersection(*({x for x, _ in run} for run in runs)))
    values = np.array([[dict(run)[x] for x in common] for run in runs], dtype=float)
    return np.array(common, dtype=float), values.mean(0), values.std(0)
