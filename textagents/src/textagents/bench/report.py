"""``textagents bench report``: a run's leaderboard from its episodes.

Writes ``leaderboard.md``, ``leaderboard.csv`` (one row per agent and env), ``summary.json`` (mean ±
standard error per env, the progression average across envs, family scores such as Crafter's, cost and
latency) and PNG plots: ``leaderboard.png`` (per-env bars with standard-error bars) and ``learning_curves.png``
when a trained agent's run holds a learning curve. The files depend only on the recorded episodes, never on
their order, so a resumed run reports exactly what an uninterrupted one does (timings aside).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from textagents.bench import costs
from textagents.bench.store import RUN_FILE, read_episodes, write_json_atomic, write_text_atomic

CSV_FIELDS = (
    "agent",
    "kind",
    "env",
    "env_id",
    "episodes",
    "success_mean",
    "success_stderr",
    "return_mean",
    "return_stderr",
    "progression_mean",
    "progression_stderr",
    "steps_mean",
    "invalid_actions_mean",
    "invalid_rate",
    "parse_fallback_rate",
    "family_score",
    *costs.CSV_FIELDS,
)


def mean_stderr(values: Sequence[float]) -> dict[str, float]:
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return {"mean": mean, "stderr": 0.0}
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return {"mean": mean, "stderr": math.sqrt(variance / n)}


def _numeric_metric_means(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The mean of every number (bools as rates) that all of the episodes' ``episode_metrics`` hold."""
    keys = set.intersection(*(set(r["metrics"]) for r in records)) if records else set()
    means = {}
    for key in sorted(keys):
        values = [r["metrics"][key] for r in records]
        if all(isinstance(v, int | float) for v in values):
            means[key] = math.fsum(float(v) for v in values) / len(values)
    return means


def family_score(records: Sequence[dict[str, Any]], env: dict[str, Any] | None = None) -> dict[str, float] | None:
    """The score a family's paper reports over many episodes of ``env`` (its ``id`` and ``kwargs``): Crafter's
    geometric-mean score over the open game's 22 achievements, or a single-task Crafter variant's success rate."""
    if records and all("achievements" in r["metrics"] for r in records):
        from textenvs.envs.crafter_text.metrics import crafter_score
        from textenvs.envs.crafter_text.registration import single_task

        if env is not None and single_task(env["id"], env["kwargs"]) is not None:
            return {"task_success_rate": math.fsum(float(r["success"]) for r in records) / len(records)}
        return {"crafter_score": crafter_score(r["metrics"] for r in records)}
    return None


def _cell(records: list[dict[str, Any]], env: dict[str, Any], prices: dict[str, Any]) -> dict[str, Any]:
    first = records[0]
    score = family_score(records, env)
    return {
        "agent": first["agent"],
        "kind": first["kind"],
        "env": first["env"],
        "env_id": first["env_id"],
        "episodes": len(records),
        "success": mean_stderr([float(r["success"]) for r in records]),
        "return": mean_stderr([float(r["return"]) for r in records]),
        "progression": mean_stderr([float(r["progression"]) for r in records]),
        "steps_mean": math.fsum(r["steps"] for r in records) / len(records),
        "invalid_actions_mean": math.fsum(r["invalid_actions"] for r in records) / len(records),
        **step_rates(records),
        "metrics": _numeric_metric_means(records),
        "family_score": score,
        "usage": costs.usage_stats(records, prices),
    }


def step_rates(records: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Per step: invalid commands the env saw, and (LLM agents) outputs that parsed to no command and were
    replaced by the fallback — an agent can show 0 invalid commands while falling back on every step."""
    steps = max(sum(r["steps"] for r in records), 1)
    stats = [r.get("agent_stats") or {} for r in records]
    fallbacks = sum(s.get("fallback", 0) for s in stats)
    return {
        "invalid_rate": sum(r["invalid_actions"] for r in records) / steps,
        "parse_fallback_rate": fallbacks / steps if any("fallback" in s for s in stats) else None,
    }


def _rate_text(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}%"


def agent_expected_episodes(run: dict[str, Any], agent: dict[str, Any]) -> int:
    """How many episodes ``agent`` (an agent of ``run.json``) plays in the suite."""
    return sum(len(env["seeds"]) for env in run["envs"] if not agent["envs"] or env["name"] in agent["envs"])


def expected_episodes(run: dict[str, Any]) -> int:
    """How many episodes the suite recorded in ``run.json`` plays."""
    return sum(agent_expected_episodes(run, agent) for agent in run["agents"])


def summarize(run: dict[str, Any], records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Per (agent, env) statistics, in the suite's order, and each agent's averages across the envs it played
    and rates per step. Only agents that played all their episodes are ranked; the others are ``partial``
    (their averages cover other episodes than the complete agents' do) and listed after them."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: (r["agent"], r["env"], r["seed"])):
        groups.setdefault((record["agent"], record["env"]), []).append(record)
    agent_order = [a["name"] for a in run["agents"]]
    envs = {e["name"]: e for e in run["envs"]}
    prices = run["suite"].get("prices", {})
    cells = [
        _cell(groups[(agent, env)], envs[env], prices)
        for env in envs
        for agent in agent_order
        if (agent, env) in groups
    ]
    agents = []
    for agent in run["agents"]:
        own = [c for c in cells if c["agent"] == agent["name"]]
        if not own:
            continue
        episodes = sum(c["episodes"] for c in own)
        expected = agent_expected_episodes(run, agent)
        played = [r for key, group in groups.items() if key[0] == agent["name"] for r in group]
        agents.append(
            {
                "agent": agent["name"],
                "kind": own[0]["kind"],
                "envs": len(own),
                "episodes": episodes,
                "expected_episodes": expected,
                "partial": episodes < expected,
                "progression_average": math.fsum(c["progression"]["mean"] for c in own) / len(own),
                "success_average": math.fsum(c["success"]["mean"] for c in own) / len(own),
                **step_rates(played),
                "usage": costs.usage_stats(played, prices),
            }
        )
    agents.sort(key=lambda a: (a["partial"], -a["progression_average"], -a["success_average"], a["agent"]))
    for rank, agent in enumerate(agents, 1):
        agent["rank"] = None if agent["partial"] else rank
    episodes = sum(c["episodes"] for c in cells)
    return {
        "suite": run["suite"]["name"],
        "suite_sha256": run["suite"]["sha256"],
        "episodes": episodes,
        "expected_episodes": expected_episodes(run),
        "agents": agents,
        "cells": cells,
        "skipped_agents": run.get("skipped_agents", []),
    }


def _pm(stat: dict[str, float], digits: int = 2) -> str:
    return f"{stat['mean']:.{digits}f} ± {stat['stderr']:.{digits}f}"


def _score_text(score: dict[str, float] | None) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in score.items()) if score else ""


def leaderboard_markdown(summary: dict[str, Any], run: dict[str, Any]) -> str:
    sessions = run.get("sessions", [])
    git = (sessions[0].get("git") if sessions else None) or {}
    packages = (sessions[0].get("packages") if sessions else None) or {}
    complete = summary["episodes"] == summary["expected_episodes"]
    status = "complete" if complete else f"partial: {summary['episodes']} of {summary['expected_episodes']} episodes"
    lines = [f"# Leaderboard: {summary['suite']}", ""]
    if run["suite"].get("description"):
        lines += [run["suite"]["description"], ""]
    versions = ", ".join(f"{k} {packages[k]}" for k in ("textenvs", "textagents", "gymnasium") if packages.get(k))
    commit = f"commit `{git['commit'][:10]}`{' (uncommitted changes)' if git.get('dirty') else ''}" if git else "no git"
    lines += [
        f"{summary['episodes']} episodes ({status}); suite sha256 `{summary['suite_sha256'][:12]}`; {commit}; "
        f"{versions}.",
        "",
        "## Overall",
        "",
        "Agents ranked by their progression (a number in [0, 1] every env reports) averaged over the envs they",
        "played; success is averaged the same way. An agent that has not played all its episodes is partial and",
        "not ranked. Invalid rate: commands the env refused, per step; parse fallback: LLM outputs that named no",
        "command and were replaced by a fallback command, per step (— for agents that do not parse outputs).",
        "",
        "| rank | agent | kind | envs | episodes | progression (avg) | success (avg) | invalid rate | parse fallback |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for a in summary["agents"]:
        rank = "—" if a["rank"] is None else a["rank"]
        episodes = f"{a['episodes']} of {a['expected_episodes']} (partial)" if a["partial"] else a["episodes"]
        lines.append(
            f"| {rank} | {a['agent']} | {a['kind']} | {a['envs']} | {episodes} | "
            f"{a['progression_average']:.3f} | {a['success_average']:.3f} | "
            f"{_rate_text(a['invalid_rate'])} | {_rate_text(a['parse_fallback_rate'])} |"
        )
    lines += ["", "## Per environment", "", "Mean ± standard error over episodes (one per seed).", ""]
    envs = list(dict.fromkeys(c["env"] for c in summary["cells"]))
    for env in envs:
        cells = [c for c in summary["cells"] if c["env"] == env]
        header_id = f" (`{cells[0]['env_id']}`)" if cells[0]["env_id"] != env else ""
        lines += [
            f"### {env}{header_id}",
            "",
            "| agent | episodes | success | return | progression | steps | invalid actions | invalid rate "
            "| parse fallback | score |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for c in cells:
            lines.append(
                f"| {c['agent']} | {c['episodes']} | {_pm(c['success'])} | {_pm(c['return'])} | "
                f"{_pm(c['progression'])} | {c['steps_mean']:.1f} | {c['invalid_actions_mean']:.1f} | "
                f"{_rate_text(c['invalid_rate'])} | {_rate_text(c['parse_fallback_rate'])} | "
                f"{_score_text(c['family_score'])} |"
            )
        lines.append("")
    lines += costs.markdown_lines(summary)
    for skipped in summary["skipped_agents"]:
        lines.append(f"Skipped agent `{skipped['name']}`: {skipped['reason']}.")
    return "\n".join(lines).rstrip() + "\n"


def leaderboard_csv(summary: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for c in summary["cells"]:
        score = c["family_score"] or {}
        writer.writerow(
            {
                "agent": c["agent"],
                "kind": c["kind"],
                "env": c["env"],
                "env_id": c["env_id"],
                "episodes": c["episodes"],
                "success_mean": f"{c['success']['mean']:.6g}",
                "success_stderr": f"{c['success']['stderr']:.6g}",
                "return_mean": f"{c['return']['mean']:.6g}",
                "return_stderr": f"{c['return']['stderr']:.6g}",
                "progression_mean": f"{c['progression']['mean']:.6g}",
                "progression_stderr": f"{c['progression']['stderr']:.6g}",
                "steps_mean": f"{c['steps_mean']:.6g}",
                "invalid_actions_mean": f"{c['invalid_actions_mean']:.6g}",
                "invalid_rate": f"{c['invalid_rate']:.6g}",
                "parse_fallback_rate": "" if c["parse_fallback_rate"] is None else f"{c['parse_fallback_rate']:.6g}",
                "family_score": ";".join(f"{k}={v:.6g}" for k, v in score.items()),
                **costs.csv_row(c["usage"]),
            }
        )
    return buffer.getvalue()


def learning_curves(run: dict[str, Any]) -> dict[str, list[dict[str, float]]]:
    """The learning curves (``learning_curve.json``) of the run's trained agents that have one."""
    curves = {}
    for agent in run["agents"]:
        run_dir = agent["options"].get("run")
        path = Path(run_dir) / "learning_curve.json" if run_dir else None
        if path is not None and path.is_file():
            curves[agent["name"]] = json.loads(path.read_text())
    return curves


def write_report(run_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """Write the leaderboard files of ``run_dir``; returns their paths by kind."""
    from textagents.bench.plots import plot_leaderboard, plot_learning_curves
    from textagents.bench.view import viewer_note

    run_dir = Path(run_dir)
    run_path = run_dir / RUN_FILE
    if not run_path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a bench run (no {RUN_FILE}): run `textagents bench run` first")
    run = json.loads(run_path.read_text())
    records = read_episodes(run_dir)
    if not records:
        raise ValueError(f"{run_dir} has no finished episode yet")
    summary = summarize(run, records)
    written = {
        "markdown": run_dir / "leaderboard.md",
        "csv": run_dir / "leaderboard.csv",
        "summary": run_dir / "summary.json",
    }
    write_text_atomic(written["markdown"], leaderboard_markdown(summary, run) + "\n" + viewer_note(run_dir))
    write_text_atomic(written["csv"], leaderboard_csv(summary))
    write_json_atomic(written["summary"], summary)
    if plots:
        written["plot"] = plot_leaderboard(summary, run_dir / "leaderboard.png")
        curves = learning_curves(run)
        if curves:
            written["learning_curves"] = plot_learning_curves(curves, run_dir / "learning_curves.png")
    return written
