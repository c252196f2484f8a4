"""``textagents lgqd report``: ``report/report.md`` and its figures from what the stages left — the archive's
size and coverage over generations (``archive.png``), the descriptions (describer, fallbacks, examples),
the DT's training (``training.png``), the judged test split with each policy's mean ± standard error under
both judges and its BD error (``scores.png``), the LLM judge against the deterministic one
(``agreement.png``), example trajectories on the household map beside their descriptions
(``trajectories.png``), and where the paper's numbers stand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from textagents.bench.store import write_text_atomic
from textagents.jsonl import read_jsonl
from textagents.methods.core.report import pyplot
from textagents.methods.core.run_dir import RunDir
from textagents.methods.lgqd.artifacts import Pipeline, save_figure
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.deploy_stage import POLICIES, load_deployments
from textagents.methods.lgqd.describe import load_descriptions
from textagents.methods.lgqd.judge import named_landmarks
from textagents.methods.lgqd.judge_stage import COMPARISONS, load_judgements
from textagents.methods.lgqd.policies import layout_of
from textagents.methods.lgqd.train_stage import RUN
from textagents.methods.lgqd.train_stage import STAGE as TRAIN_STAGE
from textenvs.envs.fastsim.layouts import get_layout
from textenvs.envs.fastsim.renderer import map_image
from textenvs.envs.fastsim.simulator import World, load_world

STAGE = "report"
#: Test items drawn on the map.
EXAMPLES = 3
#: Policies' colours in every figure.
COLOURS = {
    "dt": "tab:blue",
    "dt-other-description": "tab:purple",
    "random-archive": "tab:gray",
    "described-policy": "tab:green",
}
#: What the spec and the paper give to compare with.
PAPER = (
    'The paper (Salehi & Doncieux 2023, arXiv 2308.13278; METHODS.md "Language-grounded QD") is cited in the '
    "spec for its method only: METHODS.md states no result of it (no judge scores, BD errors or coverage), "
    "and no copy of the paper's result tables is in this project. Its numbers are therefore **not shown "
    "here**; none are made up. Its setting differs in any case: gpt-3.5-turbo descriptions of the whole "
    "archive, a 360-d DT, gpt-4 as the judge."
)


def _mean_error(stats: dict[str, Any], scale: float = 1.0) -> str:
    if stats["mean"] is None:
        return "–"
    error = f" ± {stats['se'] * scale:.3f}" if stats["se"] is not None else ""
    return f"{stats['mean'] * scale:.3f}{error} (n={stats['n']})"


def _plot_archive(progress: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    generations = [r["generation"] for r in progress]
    figure, (size_axis, coverage_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    size_axis.plot(generations, [r["archive_size"] for r in progress])
    size_axis.set(xlabel="generation", ylabel="archive entries", title="archive size")
    coverage_axis.plot(generations, [100 * r["coverage"] for r in progress])
    coverage_axis.set(xlabel="generation", ylabel="% of reachable cells", title="map coverage")
    save_figure(figure, path)


def _plot_training(metrics: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    figure, (loss_axis, accuracy_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    for kind, prefix in (("train", ""), ("eval", "val_")):
        rows = [r for r in metrics if r["kind"] == kind and f"{prefix}loss" in r]
        steps = [r["iteration"] for r in rows]
        loss_axis.plot(steps, [r[f"{prefix}loss"] for r in rows], label=kind, marker="o" if kind == "eval" else None)
        accuracy_axis.plot(steps, [r[f"{prefix}cluster_accuracy"] for r in rows], label=kind)
    loss_axis.set(xlabel="optimizer step", ylabel="focal + MSE", title="DT loss", yscale="log")
    accuracy_axis.set(xlabel="optimizer step", ylabel="cluster accuracy", title="DT cluster accuracy")
    loss_axis.legend()
    save_figure(figure, path)


def _plot_scores(summary: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    keys = (("deterministic", "deterministic judge"), ("llm", "LLM judge"), ("bd_error", "BD error (real units)"))
    figure, axes = plt.subplots(1, 3, figsize=(14, 4))
    for axis, (key, title) in zip(axes, keys, strict=True):
        stats = [summary["policies"][p][key] for p in POLICIES]
        means = [s["mean"] if s["mean"] is not None else 0.0 for s in stats]
        errors = [s["se"] or 0.0 for s in stats]
        axis.bar(POLICIES, means, yerr=errors, color=[COLOURS[p] for p in POLICIES], capsize=4)
        axis.set(title=title)
        if key != "bd_error":
            axis.set_ylim(0, 1.05)
        if all(s["mean"] is None for s in stats):
            axis.text(0.5, 0.5, "no scores", transform=axis.transAxes, ha="center", va="center")
        axis.tick_params(axis="x", labelrotation=20)
    save_figure(figure, path)


def _plot_agreement(judgements: list[dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(4.5, 4))
    for policy in POLICIES:
        pairs = [(r["deterministic"], r["llm"]) for r in judgements if r["policy"] == policy]
        pairs = [p for p in pairs if None not in p]
        if pairs:
            axis.scatter(*zip(*pairs, strict=True), label=policy, color=COLOURS[policy], alpha=0.6)
    axis.set(xlabel="deterministic judge", ylabel="LLM judge", xlim=(-0.05, 1.05), ylim=(-0.05, 1.05))
    axis.legend(fontsize=8)
    save_figure(figure, path)


def _plot_examples(world: World, cases: list[list[dict[str, Any]]], path: Path) -> None:
    plt = pyplot()
    real = world.layout.real_size
    figure, axes = plt.subplots(1, len(cases), figsize=(5 * len(cases), 5), squeeze=False)
    for index, (axis, records) in enumerate(zip(axes[0], cases, strict=True)):
        axis.imshow(map_image(world), extent=(0, real, real, 0))
        for record in records:
            trajectory = np.asarray(record["trajectory"])
            axis.plot(*trajectory.T, color=COLOURS[record["policy"]], label=record["policy"], linewidth=1.5)
        target = records[0]["target_bd"]
        axis.scatter([target[0]], [target[1]], marker="*", s=200, color="red", label="target")
        axis.set(title=f"example {index + 1}: test item {records[0]['item']}", xlim=(0, real), ylim=(real, 0))
        axis.set_xticks([])
        axis.set_yticks([])
        axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=3)
    save_figure(figure, path)


def _setting_lines(config: LGQDConfig, describe: dict[str, Any]) -> list[str]:
    chosen = describe["selected"] < describe["items"]
    return [
        f"- Archive: novelty search on `{config.env_id}`, {config.generations} generations of {config.population} "
        f"parents + {config.offspring} children, horizon {config.horizon}, dedupe tolerance {config.dedupe_tolerance}.",
        f"- Descriptions: `{config.describer}`"
        + (
            f" ({describe['model']}, temperature {config.temperature}, ≤ {config.max_tokens} tokens)"
            if describe["model"]
            else ""
        )
        + (
            f"; **{describe['selected']} of the {describe['items']} annotated items, drawn with seed {config.seed}** "
            f"(`describe_items: {config.describe_items}`), are described and split."
            if chosen
            else f"; all {describe['items']} items."
        ),
        f"- DT: {config.dt_layers} layers, {config.dt_heads} heads, {config.dt_embedding}-d, batches of "
        f"{config.dt_batch_size} episodes, {config.iterations} optimizer steps (lr {config.dt_learning_rate}, "
        f"warmup {config.dt_warmup_steps}), {config.action_clusters} clusters an action dimension, a "
        f"{config.tokenizer_vocab}-token BPE tokenizer trained on the train descriptions"
        + (
            "; conditioned on the description and the target descriptor (the paper's)."
            if config.dt_condition_on_target
            else "; **conditioned on the description only** (`dt_condition_on_target: false`: the target is hidden)."
        ),
        f"- Deployment: {config.deploy_trials} trials a test description ({config.deploy_strategy} clusters), the "
        "trial ending nearest the target kept (the paper's).",
    ]


def run_report(out: str | Path) -> dict[str, Any]:
    pipeline = Pipeline(out)
    config = pipeline.config()
    folder = pipeline.stage(STAGE)
    progress = read_jsonl(pipeline.require("archive", "progress.jsonl"))[0]
    archive = json.loads(pipeline.require("archive", "archive.json").read_text())
    kept = json.loads(pipeline.require("dedupe", "archive.json").read_text())
    describe = json.loads(pipeline.require("describe", "describe.json").read_text())
    descriptions = load_descriptions(pipeline)
    split = json.loads(pipeline.require("split", "split.json").read_text())
    metrics = RunDir(pipeline.require(TRAIN_STAGE, f"{RUN}/policy.json").parent).metrics()
    deployments, judgements = load_deployments(pipeline), load_judgements(pipeline)
    summary = json.loads(pipeline.require("judge", "judge.json").read_text())

    _plot_archive(progress, folder / "archive.png")
    _plot_training(metrics, folder / "training.png")
    _plot_scores(summary, folder / "scores.png")
    compared = summary["agreement"] is not None and summary["agreement"]["pairs"] > 0
    (folder / "agreement.png").unlink(missing_ok=True)
    if compared:
        _plot_agreement(judgements, folder / "agreement.png")
    items = list(dict.fromkeys(d["item"] for d in deployments))[:EXAMPLES]
    cases = [[d for d in deployments if d["item"] == item] for item in items]
    _plot_examples(load_world(layout_of(config.env_id)), cases, folder / "trajectories.png")

    scores = {(r["item"], r["policy"]): r for r in judgements}
    train_rows = [r for r in metrics if r["kind"] == "train"]
    eval_rows = [r for r in metrics if r["kind"] == "eval"]
    fallback_rate = describe["fallbacks"] / max(describe["described"], 1)
    layout = get_layout(layout_of(config.env_id))
    naming = sum(bool(named_landmarks(r["description"], layout)) for r in descriptions.values())
    lines = [
        f"# Language-grounded QD: pipeline report (`{pipeline.path}`)",
        "",
        *_setting_lines(config, describe),
        "",
        "## Archive",
        "",
        f"{archive['entries']} entries ({archive['distinct_individuals']} distinct individuals) after "
        f"{archive['generations']} generations, covering {100 * archive['coverage']:.1f} % of the reachable map "
        f"cells ({archive['coverage_grid']}); {kept.get('entries_out', '?')} kept by dedupe.",
        "",
        "![archive size and coverage](archive.png)",
        "",
        "## Descriptions",
        "",
        f"{describe['described']} described by `{describe['describer']}`"
        + (f" ({describe['model']})" if describe["model"] else "")
        + f"; styles {describe['styles']}; **{describe['fallbacks']} fallbacks to the template "
        f"({100 * fallback_rate:.1f} %)** (answers with nothing usable); {naming} "
        f"({100 * naming / max(len(descriptions), 1):.1f} %) name a landmark of the map (an object or a tile "
        f"colour: what the deterministic judge checks). Split {len(split['train'])} / "
        f"{len(split['val'])} / {len(split['test'])}. The first three:",
        "",
        *[
            f"- item {i} ({r['style']}{', fallback' if r['fallback'] else ''}): {r['description'][:400]!r}"
            for i, r in list(descriptions.items())[:3]
        ],
        "",
        "## Decision transformer",
        "",
        f"{train_rows[-1]['optimizer_steps']} optimizer steps: train loss {train_rows[-1]['loss']:.3f} "
        f"(cluster accuracy {train_rows[-1]['cluster_accuracy']:.3f}); validation loss "
        f"{eval_rows[-1].get('val_loss', float('nan')):.3f} (cluster accuracy "
        f"{eval_rows[-1].get('val_cluster_accuracy', float('nan')):.3f}).",
        "",
        "![training](training.png)",
        "",
        "## Judged on the test split",
        "",
        "Each test description deployed with the DT; the DT given another description (the next test "
        "item's, with this item's target and the same draws) shows what it does without the right text; the "
        "control is a random archive policy (a random train item's trajectory); the described policy is the "
        "trajectory the description was written from (the ceiling); all judged against the same "
        "description. Mean ± standard error over the test items; BD error: distance from the final position "
        "to the target, real units (the paper's map pixels: ÷ 3).",
        "",
        "| policy | cases | deterministic judge | LLM judge (unparsed) | BD error |",
        "|---|---|---|---|---|",
    ]
    for policy in POLICIES:
        stats = summary["policies"][policy]
        lines.append(
            f"| {policy} | {stats['cases']} | {_mean_error(stats['deterministic'])} | "
            f"{_mean_error(stats['llm'])} ({stats['llm_unparsed']}) | {_mean_error(stats['bd_error'])} |"
        )
    lines.append("")
    for name, (policy, baseline) in COMPARISONS.items():
        paired = summary[name]
        lines.append(
            f"- {policy} minus {baseline}, paired by item: deterministic judge {_mean_error(paired['deterministic'])}, "
            f"LLM judge {_mean_error(paired['llm'])}, BD error {_mean_error(paired['bd_error'])}."
        )
    lines += [
        "",
        "The deterministic judge is undefined for a description naming no landmark of the map.",
        "",
        "![scores](scores.png)",
        "",
        "## LLM judge against the deterministic judge",
        "",
    ]
    agreement = summary["agreement"]
    if agreement is None:
        lines.append("No LLM judged this pipeline (no judge model named): the deterministic judge only.")
    else:
        lines += [
            f"Judge: `{summary['judge_model']}`. {agreement['pairs']} cases scored by both; "
            f"{agreement['llm_unparsed']} LLM answers without a `score==` line, "
            f"{agreement['deterministic_undefined']} descriptions naming no landmark. Pearson "
            f"{agreement['pearson']}, Spearman {agreement['spearman']}, agreement at 0.5 "
            f"{agreement['accuracy_at_threshold']}, mean absolute difference {agreement['mean_absolute_difference']}.",
            *(["", "![agreement](agreement.png)"] if compared else []),
        ]
    lines += ["", "## Examples on the map", "", "![trajectories](trajectories.png)", ""]
    for index, records in enumerate(cases, start=1):
        lines.append(f"{index}. item {records[0]['item']}: {records[0]['description'][:400]!r}")
        for record in records:
            judged = scores.get((record["item"], record["policy"]), {})
            lines.append(
                f"   - {record['policy']}: deterministic {judged.get('deterministic')}, LLM {judged.get('llm')}, "
                f"BD error {record['bd_error']:.1f}"
            )
    lines += ["", "## The paper's numbers", "", PAPER, ""]
    write_text_atomic(folder / "report.md", "\n".join(lines))
    return {
        "stage": STAGE,
        "report": str(folder / "report.md"),
        "figures": sorted(p.name for p in folder.glob("*.png")),
    }
