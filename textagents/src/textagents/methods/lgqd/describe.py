"""``textagents lgqd describe``: one description per annotated trajectory, by the LLM (the paper's three
styles, through ``LLMBackend``, every call recorded to the pipeline's ``llm_calls.jsonl``) or by the
template, of every annotated item or of ``describe_items`` of them drawn with the seed. Each batch of
descriptions is appended to ``describe/descriptions.jsonl`` as soon as it is made, so a stopped stage
continues where it stopped; an answer with no usable description gets the template's sentence instead,
flagged ``"fallback": true`` and counted."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from textagents.bench.store import write_json_atomic
from textagents.jsonl import append_records, read_jsonl
from textagents.llm.base import chat_batch
from textagents.methods.core.runner import LLMChoice, _llm_factory
from textagents.methods.lgqd.annotate import ANNOTATIONS
from textagents.methods.lgqd.artifacts import Pipeline, PipelineError, read_npz
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.prompts import describe_messages, draw_style, read_description
from textagents.methods.lgqd.template import STYLE as TEMPLATE_STYLE
from textagents.methods.lgqd.template import template_description

STAGE = "describe"
DESCRIPTIONS = "descriptions.jsonl"


def read_annotations(path: Path) -> list[Any]:
    """The annotations of ``annotations.jsonl``, item by item."""
    records = read_jsonl(path)[0]
    return [r["annotation"] for r in sorted(records, key=lambda r: r["item"])]


def done_descriptions(path: Path) -> dict[int, dict[str, Any]]:
    """The descriptions already made, by item (the first of each; a line cut by a kill is skipped)."""
    found: dict[int, dict[str, Any]] = {}
    for record in read_jsonl(path)[0] if path.is_file() else []:
        found.setdefault(int(record["item"]), record)
    return found


def selected_items(count: int, describe_items: int | None, seed: int) -> list[int]:
    """The items to describe, ascending: all ``count``, or ``describe_items`` of them drawn without
    replacement by ``seed``."""
    if describe_items is None or describe_items >= count:
        return list(range(count))
    return sorted(np.random.default_rng(seed).choice(count, describe_items, replace=False).tolist())


def run_describe(out: str | Path, llm: LLMChoice | None = None, progress: bool = True) -> dict[str, Any]:
    """Describe every selected item not described yet; ``llm`` overrides the config's model (or replays)."""
    pipeline = Pipeline(out)
    llm = llm or LLMChoice()
    overrides = {k: v for k, v in llm.config_overrides().items() if v is not None}
    config = dataclasses.replace(pipeline.config(), **overrides)
    annotations = read_annotations(pipeline.require("annotate", ANNOTATIONS))
    bd = read_npz(pipeline.require("annotate", "rollouts.npz"))["bd"]
    path = pipeline.stage(STAGE) / DESCRIPTIONS
    selected = selected_items(len(annotations), config.describe_items, config.seed)
    done = done_descriptions(path)
    missing = [item for item in selected if item not in done]
    # the runner's LLM builder: the config's model (or --model / --base-url, or a replay), recorded
    llm_backend = _llm_factory(config, pipeline.run, llm) if config.describer == "llm" else None
    bar = tqdm(total=len(selected), initial=len(selected) - len(missing), desc="lgqd describe", disable=not progress)
    for start in range(0, len(missing), config.describe_batch):
        batch = missing[start : start + config.describe_batch]
        if llm_backend is None:
            records = [_record(i, TEMPLATE_STYLE, template_description(annotations[i]), None, False) for i in batch]
        else:
            records = _ask(llm_backend(), config, batch, annotations, bd)
        append_records(path, records)
        bar.update(len(batch))
    bar.close()
    return _summarise(pipeline, config, len(annotations), selected, done_descriptions(path))


def _ask(backend: Any, config: LGQDConfig, items: list[int], annotations: list[Any], bd: np.ndarray) -> list[dict]:
    styles = [draw_style(config.style_weights, config.seed, item) for item in items]
    answers = chat_batch(
        backend,
        [describe_messages(style, annotations[item]) for item, style in zip(items, styles, strict=True)],
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )
    records = []
    for item, style, answer in zip(items, styles, answers, strict=True):
        description = read_description(answer, style, bd[item])
        fallback = description is None
        text = template_description(annotations[item]) if fallback else description
        records.append(_record(item, style, text, answer, fallback))
    return records


def _record(item: int, style: str, description: str, answer: Any, fallback: bool) -> dict[str, Any]:
    return {"item": item, "style": style, "description": description, "answer": answer, "fallback": fallback}


def _summarise(
    pipeline: Pipeline, config: LGQDConfig, items: int, selected: list[int], done: dict[int, dict]
) -> dict[str, Any]:
    done = {i: done[i] for i in selected if i in done}
    summary = {
        "stage": STAGE,
        "items": items,
        "selected": len(selected),
        "described": len(done),
        "describer": config.describer,
        "model": config.model if config.describer == "llm" else None,
        "styles": dict(Counter(r["style"] for r in done.values())),
        "fallbacks": sum(bool(r["fallback"]) for r in done.values()),
        "temperature": config.temperature if config.describer == "llm" else None,
    }
    write_json_atomic(pipeline.stage(STAGE) / "describe.json", {**summary, "selected_items": selected})
    return summary


def load_descriptions(pipeline: Pipeline) -> dict[int, dict[str, Any]]:
    """Each selected item's description record by item, ascending; an error when the stage has not
    finished."""
    done = done_descriptions(pipeline.require(STAGE, DESCRIPTIONS))
    selected = json.loads(pipeline.require(STAGE, "describe.json").read_text())["selected_items"]
    missing = [i for i in selected if i not in done]
    if missing:
        raise PipelineError(f"{len(missing)} items are not described yet: run `textagents lgqd describe` again")
    return {i: done[i] for i in selected}
