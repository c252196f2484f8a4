"""``textagents lgqd deploy``: the trained decision transformer deployed from each test description (the
first ``deploy_items``), asked for the test item's descriptor, and beside it three policies judged against
the same description: the **DT given another description** (the next test item's, cyclically, with this
item's target and the same cluster draws: what the DT does without the right text, so the difference is
what it reads from the description), the control, a **random archive policy** (a train item drawn per test
item: what a policy that ignores the description does), and the **described policy** itself (the
trajectory the description was written from: what a perfect follower would do).
``deploy/deployments.jsonl`` holds one line per (item, policy), ``Deployment.to_json`` plus ``item``,
``policy`` and ``source_item`` (the archive item whose trajectory it is, or whose description the DT was
given instead; None for the DT); each test item's lines are appended together, so a stopped stage
continues with the next item."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from textagents.bench.store import write_json_atomic
from textagents.jsonl import append_records, read_jsonl
from textagents.methods.lgqd.artifacts import Pipeline
from textagents.methods.lgqd.dataset import Episodes, load_split
from textagents.methods.lgqd.deploy import Deployment, deploy
from textagents.methods.lgqd.dt import load_policy
from textagents.methods.lgqd.train_stage import load_tokenizer, policy_folder

STAGE = "deploy"
DEPLOYMENTS = "deployments.jsonl"
#: The deployed policies: the DT, the DT given another description, the random archive policy (the
#: control), the described policy.
POLICIES = ("dt", "dt-other-description", "random-archive", "described-policy")


def archive_deployment(episodes: Episodes, row: int, description: str, target_bd: np.ndarray) -> Deployment:
    """Row ``row`` of ``episodes`` (an archive policy's replayed episode) as a deployment asked for
    ``description`` and ``target_bd``: one trial, its trajectory, annotation and error."""
    bd = episodes.bd[row].astype(np.float64)
    error = float(np.hypot(*(bd - target_bd)))
    return Deployment(
        description=description,
        target_bd=(float(target_bd[0]), float(target_bd[1])),
        trajectory=episodes.positions[row].astype(np.float64),
        annotation=list(episodes.annotations[row]),
        bd=(float(bd[0]), float(bd[1])),
        bd_error=error,
        trial_errors=(error,),
    )


def records_by_case(path: Path) -> dict[tuple[int, str], dict[str, Any]]:
    """The records of the JSONL file ``path`` by (item, policy), the first of each, in the order written (a
    line cut by a kill is skipped); {} when there is no file."""
    found: dict[tuple[int, str], dict[str, Any]] = {}
    for record in read_jsonl(path)[0] if path.is_file() else []:
        found.setdefault((int(record["item"]), record["policy"]), record)
    return found


def load_deployments(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Every deployment record of the finished stage, item by item in the order deployed."""
    pipeline.require(STAGE, "deploy.json")
    return list(records_by_case(pipeline.require(STAGE, DEPLOYMENTS)).values())


def run_deploy(out: str | Path, progress: bool = True) -> dict[str, Any]:
    pipeline = Pipeline(out)
    config = pipeline.config()
    folder = policy_folder(pipeline)
    test, train = load_split(out, "test"), load_split(out, "train")
    model, tokenizer = load_policy(folder, config.torch_device()), load_tokenizer(pipeline)
    count = len(test.items) if config.deploy_items is None else min(config.deploy_items, len(test.items))
    path = pipeline.stage(STAGE) / DEPLOYMENTS
    written = records_by_case(path)
    done = {item for item, _ in written if all((item, policy) in written for policy in POLICIES)}
    for row in tqdm(range(count), desc="lgqd deploy", disable=not progress):
        item, description, target = int(test.items[row]), test.descriptions[row], test.bd[row].astype(np.float64)
        if item in done:
            continue
        rng = np.random.default_rng([config.seed, item])
        control = int(rng.integers(len(train.items)))
        other = (row + 1) % len(test.items)
        settings = {
            "env_id": config.env_id,
            "trials": config.deploy_trials,
            "horizon": config.horizon,
            "strategy": config.deploy_strategy,
            "seed": int(rng.integers(2**31)),
        }
        trained = deploy(model, tokenizer, description, target, **settings)
        misled = deploy(model, tokenizer, test.descriptions[other], target, **settings)
        records = [
            (trained, None),
            (dataclasses.replace(misled, description=description), int(test.items[other])),
            (archive_deployment(train, control, description, target), int(train.items[control])),
            (archive_deployment(test, row, description, target), item),
        ]
        append_records(
            path,
            [
                {"item": item, "policy": policy, "source_item": source, **deployment.to_json()}
                for policy, (deployment, source) in zip(POLICIES, records, strict=True)
            ],
        )
    summary = {
        "stage": STAGE,
        "items": count,
        "trials": config.deploy_trials,
        "strategy": config.deploy_strategy,
        "policies": list(POLICIES),
    }
    write_json_atomic(pipeline.stage(STAGE) / "deploy.json", summary)
    return summary
