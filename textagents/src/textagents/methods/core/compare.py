"""One method, one config, several values of one setting (an agent, a goal source ...) and several seeds:
one resumable run each, then ``comparison.md`` and its plots (``comparison_report``: curves, final-budget and
AUC measures with bootstrap CIs, paired differences and verdicts). ``textagents method compare METHOD CONFIG
--out DIR --vary KEY=V1,V2 --seeds 0 1`` (``--set KEY=VALUE`` changes a setting of the config for every run);
the same command again skips finished runs and resumes unfinished ones (with a larger ``iterations``, it
extends the finished ones). Runs made at different code states are refused before any training, unless
``--allow-mixed-code``. ``--backend ray`` makes each run a Ray task (``compare_ray``). ``textagents method
summarise DIR`` writes the report again from the folders alone (``find_arms``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from textagents.bench.metadata import package_versions, project_commit
from textagents.methods.core.code_state import CodeState, check_pooled, run_code_states
from textagents.methods.core.compare_ray import RunResources, run_on_ray
from textagents.methods.core.comparison_report import Arm, read_config, write_comparison
from textagents.methods.core.config import ConfigError, load_config, read_config_file
from textagents.methods.core.run_dir import CONFIG_FILE, METRICS_FILE, RunDir
from textagents.methods.core.runner import LLMChoice
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


BACKENDS = ("local", "ray")


class RunsFailedError(RuntimeError):
    """Runs of a Ray comparison failed; the others finished and ``comparison.md`` reports them."""


def run_comparison(
    method: str,
    config_path: str | Path,
    out: str | Path,
    key: str,
    values: Sequence[Any],
    seeds: Sequence[int],
    llm: LLMChoice | None = None,
    progress: bool = True,
    settings: dict[str, Any] | None = None,
    unsafe_local_exec: bool = False,
    allow_mixed_code: bool = False,
    backend: str = "local",
    resources: RunResources | None = None,
    address: str | None = None,
) -> Path:
    """Every run not finished, one after another in this process (``backend="local"``: the first failure stops
    the comparison) or as Ray tasks with ``resources`` each (``"ray"``, on the cluster at ``address``:
    ``ray_session``), then ``comparison.md``. With Ray, failed runs are left out of the report and named
    afterwards in a ``RunsFailedError``."""
    if backend not in BACKENDS:
        raise ConfigError(f"--backend {short_repr(backend)}: expected one of {', '.join(BACKENDS)}")
    cls = method_class(method)
    llm = llm or LLMChoice()
    resources = resources or RunResources()
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
            config = load_config(cls.config_class, path, llm.config_overrides())  # every config checked first
            if backend == "ray":
                resources.check_device(name, config.device)
            runs.append((name, path, config.iterations))
    to_run = [(name, path) for name, path, iterations in runs if not _finished(out / name, iterations)]
    _check_code_before_running(out, [name for name, _, _ in runs], {name for name, _ in to_run}, allow_mixed_code)
    options = {"llm": llm, "unsafe_local_exec": unsafe_local_exec}
    failed: dict[str, str] = {}
    if backend == "local":
        for name, path in to_run:
            run_one(method, path, out / name, progress=progress, **options)
    else:
        failed = run_on_ray(method, to_run, out, resources, address, options, progress)
    arms = [Arm(str(value), {seed: out / run_name(key, value, seed) for seed in seeds}) for value in values]
    if not failed:
        return write_comparison(out, method, key, arms, allow_mixed_code)
    arms = [Arm(arm.label, {s: r for s, r in arm.runs.items() if r.name not in failed}) for arm in arms]
    arms = [arm for arm in arms if arm.runs]
    written = f"{write_comparison(out, method, key, arms, allow_mixed_code)} reports the others" if arms else ""
    listed = "; ".join(f"{name} ({error})" for name, error in failed.items())
    raise RunsFailedError(
        f"{len(failed)} of {len(runs)} runs failed: {listed}; {written or 'no run finished'}; the same command "
        "again retries them (finished runs are skipped)"
    )


def run_one(method: str, path: Path, run_dir: Path, *, llm: LLMChoice, progress: bool, unsafe_local_exec: bool) -> None:
    """One run of a comparison: started, or resumed when its folder holds a started run (from its checkpoint, or
    from 0 when a kill left none)."""
    from textagents.methods.core.runner import run_method

    resume = (run_dir / CONFIG_FILE).is_file()
    run_method(method, path, run_dir, resume=resume, llm=llm, progress=progress, unsafe_local_exec=unsafe_local_exec)


def _finished(run_dir: Path, iterations: int) -> bool:
    """Whether a run is done (a larger ``iterations`` extends it)."""
    return (run_dir / "report.md").is_file() and RunDir(run_dir).recorded()["config"]["iterations"] >= iterations


def _check_code_before_running(out: Path, names: list[str], to_run: set[str], allow_mixed: bool) -> None:
    """Refuse before any training when the runs would end at different code states: the finished ones at
    theirs, the ones this command starts or resumes at the current one too."""
    current = CodeState.of(project_commit(), package_versions())
    states = {}
    for name in names:
        recorded = read_config(out / name)
        before = run_code_states(recorded) if recorded is not None else ()
        states[name] = tuple(dict.fromkeys([*before, current])) if name in to_run else before
    check_pooled(states, allow_mixed)


_SEED_SUFFIX = re.compile(r"^(?P<arm>.+)_seed(?P<seed>\d+)$")


def find_arms(folder: str | Path, order: Sequence[str] | None = None) -> tuple[str, str, list[Arm]]:
    """The method, the compared key and the arms of a comparison folder, from its run folders alone:
    ``KEY=VALUE_seedN`` (``compare``'s names; the value's label read from the run's config) or, for folders
    named otherwise, ``ARM_seedN`` (key ``arm``). ``order`` picks and orders the arms by label (the first is
    the baseline of the paired differences); by default every arm, sorted by label."""
    folder = Path(folder)
    found: dict[str, dict[int, Path]] = {}
    for run in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = _SEED_SUFFIX.match(run.name)
        if match and (run / METRICS_FILE).is_file():
            found.setdefault(match["arm"], {})[int(match["seed"])] = run
    if not found:
        raise ConfigError(f"{folder} holds no run folder named ARM_seedN with a {METRICS_FILE}")
    methods = {(read_config(run) or {}).get("method") for runs in found.values() for run in runs.values()}
    if len(methods) != 1 or None in methods:
        raise ConfigError(
            f"{folder}: its runs are not all of one method (config.json names {sorted(map(str, methods))})"
        )
    keys = {prefix.partition("=")[0] for prefix in found if "=" in prefix}
    key = keys.pop() if len(keys) == 1 and all("=" in prefix for prefix in found) else "arm"
    labels = {prefix: _label(prefix, key, runs) for prefix, runs in found.items()}
    if len(set(labels.values())) < len(labels):
        # folders renamed after the run (shaping=reference_seed0 holds shaping: code): the recorded values would
        # merge different arms, so every arm is named by its folder instead
        labels = {prefix: prefix.partition("=")[2] if "=" in prefix else prefix for prefix in found}
    arms = {labels[prefix]: runs for prefix, runs in found.items()}
    if order:
        unknown = [label for label in order if label not in arms]
        if unknown:
            raise ConfigError(f"--arms {', '.join(unknown)}: not in {folder}; it holds {', '.join(sorted(arms))}")
        arms = {label: arms[label] for label in order}
    else:
        arms = dict(sorted(arms.items()))
    return methods.pop(), key, [Arm(label, runs) for label, runs in arms.items()]


def _label(prefix: str, key: str, runs: dict[int, Path]) -> str:
    """An arm's label: the folder's prefix, or for ``KEY=VALUE`` the value its runs record under KEY (a
    folder name writes a path's ``/`` as ``_``)."""
    if key == "arm":
        return prefix
    recorded = (read_config(next(iter(runs.values()))) or {}).get("config", {})
    return str(recorded[key]) if key in recorded else prefix.partition("=")[2]
