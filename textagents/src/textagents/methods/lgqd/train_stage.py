"""``textagents lgqd train-dt``: a byte-level BPE tokenizer trained on the train split's descriptions
(``train-dt/tokenizer/``, made once), then the decision transformer trained on the train split and
validated on val (``train-dt/dt/``: a run folder with ``metrics.jsonl``, checkpoints and at the end
``policy.safetensors`` + ``policy.json``). Run again after a stop, it continues from the last checkpoint."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from textagents.methods.core.run_dir import RunDir
from textagents.methods.lgqd.artifacts import Pipeline, PipelineError
from textagents.methods.lgqd.cluster_stage import load_clusters
from textagents.methods.lgqd.dataset import load_split
from textagents.methods.lgqd.dt import DecisionTransformer, DTTrainer, dt_episodes, train_dt

STAGE = "train-dt"
TOKENIZER = "tokenizer"
RUN = "dt"


def make_tokenizer(folder: Path, descriptions: list[str], vocab_size: int) -> None:
    """Train the tokenizer on ``descriptions`` and save it in ``folder`` (written aside, then renamed)."""
    from textagents.testing import train_tokenizer

    aside = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        train_tokenizer(descriptions, vocab_size=vocab_size).save_pretrained(aside)
        os.replace(aside, folder)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def load_tokenizer(pipeline: Pipeline) -> Any:
    """The tokenizer the stage saved (its JSON files: loading runs no code)."""
    from transformers import PreTrainedTokenizerFast

    folder = pipeline.path / STAGE / TOKENIZER
    if not (folder / "tokenizer.json").is_file():
        raise PipelineError(f"{folder} is missing: run `textagents lgqd {STAGE} {pipeline.path}` first")
    return PreTrainedTokenizerFast.from_pretrained(folder)


def policy_folder(pipeline: Pipeline) -> Path:
    """The trained policy's folder; an error naming the stage when training has not finished."""
    return pipeline.require(STAGE, f"{RUN}/policy.json").parent


def run_train_dt(out: str | Path) -> dict[str, Any]:
    pipeline = Pipeline(out)
    config = pipeline.config()
    clusters = load_clusters(pipeline)
    train, val = load_split(out, "train"), load_split(out, "val")
    folder = pipeline.stage(STAGE)
    if not (folder / TOKENIZER / "tokenizer.json").is_file():
        make_tokenizer(folder / TOKENIZER, train.descriptions, config.tokenizer_vocab)
    tokenizer = load_tokenizer(pipeline)
    torch.manual_seed(config.seed)  # the initial weights are drawn from torch's global generator
    model = DecisionTransformer(config.dt_settings(), len(tokenizer), clusters)
    trainer = DTTrainer(
        model, tokenizer, clusters, dt_episodes(train), dt_episodes(val), seed=config.seed, device=config.torch_device()
    )
    run = train_dt(
        folder / RUN,
        trainer,
        config.iterations,
        config.checkpoint_every,
        keep_checkpoints=config.keep_checkpoints,
        eval_every=config.eval_every,
    )
    metrics = RunDir(run).metrics()
    last = {kind: [r for r in metrics if r["kind"] == kind][-1] for kind in ("train", "eval")}
    return {
        "stage": STAGE,
        "policy": str(run),
        "iterations": config.iterations,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocabulary": len(tokenizer),
        "train_loss": last["train"]["loss"],
        "val_loss": last["eval"].get("val_loss"),
    }
