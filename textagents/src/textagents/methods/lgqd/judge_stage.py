"""``textagents lgqd judge``: every deployment judged against its description by the deterministic judge
(``landmark_order_score``) and, when an LLM is named (``--model`` / ``--base-url`` / ``--llm-replay``, else
the config's ``judge_model``, else its ``model``), by the LLM judge; ``judge/judgements.jsonl`` (one line
per deployment, appended a batch at a time, so a stopped stage continues) and ``judge/judge.json``: per
policy the mean and standard error of each judge's score and of the BD error, the DT's paired differences
from the control and from itself given another description (``COMPARISONS``), and the two judges'
agreement."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from textagents.bench.store import write_json_atomic
from textagents.jsonl import append_records
from textagents.methods.core.runner import LLMChoice, _llm_factory
from textagents.methods.lgqd.artifacts import Pipeline
from textagents.methods.lgqd.deploy_stage import POLICIES, load_deployments, records_by_case
from textagents.methods.lgqd.judge import (
    LLMJudgement,
    expected_score_judge,
    judge_agreement,
    landmark_order_score,
    llm_judge,
)

STAGE = "judge"
JUDGEMENTS = "judgements.jsonl"
#: The paired comparisons of ``judge.json``: (policy, baseline) by name.
COMPARISONS = {
    "dt_minus_control": ("dt", "random-archive"),
    "dt_minus_other_description": ("dt", "dt-other-description"),
}
#: What is measured of every judged deployment: summarised per policy and paired in each comparison.
MEASURES = ("deterministic", "llm", "bd_error")


def mean_and_error(values: Sequence[float | None]) -> dict[str, Any]:
    """``n`` defined values, their ``mean`` and standard error ``se`` (None below two), and ``undefined``."""
    defined = [float(v) for v in values if v is not None]
    n = len(defined)
    mean = sum(defined) / n if n else None
    se = None
    if n >= 2:
        variance = sum((v - mean) ** 2 for v in defined) / (n - 1)
        se = math.sqrt(variance / n)
    return {"n": n, "mean": mean, "se": se, "undefined": len(values) - n}


def paired_differences(judgements: list[dict[str, Any]], key: str, policy: str, control: str) -> dict[str, Any]:
    """``policy`` minus ``control`` of ``key`` over the items where both are defined: mean and error."""
    by_item: dict[int, dict[str, Any]] = {}
    for record in judgements:
        by_item.setdefault(record["item"], {})[record["policy"]] = record[key]
    return mean_and_error(
        [
            pair[policy] - pair[control]
            for pair in by_item.values()
            if pair.get(policy) is not None and pair.get(control) is not None
        ]
    )


def summarise(judgements: list[dict[str, Any]], judge_model: str | None) -> dict[str, Any]:
    """What ``judge.json`` holds (see the module docstring)."""
    policies = {}
    for policy in POLICIES:
        mine = [r for r in judgements if r["policy"] == policy]
        policies[policy] = {key: mean_and_error([r[key] for r in mine]) for key in MEASURES} | {
            "cases": len(mine),
            "llm_unparsed": sum(r["answer"] is not None and r["llm"] is None for r in mine),
        }
    return {
        "stage": STAGE,
        "judge_model": judge_model,
        "cases": len(judgements),
        "policies": policies,
        **{
            name: {key: paired_differences(judgements, key, policy, baseline) for key in MEASURES}
            for name, (policy, baseline) in COMPARISONS.items()
        },
        "agreement": judge_agreement([r["llm"] for r in judgements], [r["deterministic"] for r in judgements])
        if judge_model is not None
        else None,
    }


def load_judgements(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Every judgement of the finished stage."""
    pipeline.require(STAGE, "judge.json")
    return list(records_by_case(pipeline.require(STAGE, JUDGEMENTS)).values())


def run_judge(
    out: str | Path, llm: LLMChoice | None = None, progress: bool = True, scoring: str | None = None
) -> dict[str, Any]:
    """Judge every deployment not judged yet; ``llm`` overrides the config's judge (or replays), ``scoring``
    its ``judge_scoring`` (the config is recorded when the archive starts: a judge can be chosen later)."""
    pipeline = Pipeline(out)
    llm = llm or LLMChoice()
    config = pipeline.config()
    config = dataclasses.replace(
        config, model=config.judge_model or config.model, judge_scoring=scoring or config.judge_scoring
    )
    config = dataclasses.replace(config, **{k: v for k, v in llm.config_overrides().items() if v is not None})
    uses_llm = config.model is not None or llm.replay is not None
    backend = _llm_factory(config, pipeline.run, llm) if uses_llm else None
    deployments = load_deployments(pipeline)
    path = pipeline.stage(STAGE) / JUDGEMENTS
    done = records_by_case(path)
    missing = [d for d in deployments if (d["item"], d["policy"]) not in done]
    bar = tqdm(total=len(deployments), initial=len(deployments) - len(missing), desc="lgqd judge", disable=not progress)
    for start in range(0, len(missing), config.judge_batch):
        batch = missing[start : start + config.judge_batch]
        cases = [(d["description"], d["annotation"]) for d in batch]
        if backend is None:
            verdicts: Sequence[LLMJudgement | None] = [None] * len(batch)
        elif config.judge_scoring == "expected":
            verdicts = expected_score_judge(backend(), cases)
        else:
            verdicts = llm_judge(backend(), cases, max_tokens=config.judge_max_tokens)
        append_records(
            path,
            [
                {
                    "item": d["item"],
                    "policy": d["policy"],
                    "deterministic": landmark_order_score(d["description"], d["annotation"]),
                    "llm": verdict.score if verdict else None,
                    "llm_raw": verdict.raw if verdict else None,
                    "answer": verdict.answer if verdict else None,
                    "bd_error": d["bd_error"],
                }
                for d, verdict in zip(batch, verdicts, strict=True)
            ],
        )
        bar.update(len(batch))
    bar.close()
    judge_name = (config.model or backend().model_name) if backend else None  # a replay names its model
    summary = summarise(list(records_by_case(path).values()), judge_name) | {"judge_scoring": config.judge_scoring}
    write_json_atomic(pipeline.stage(STAGE) / "judge.json", summary)
    return summary
