"""Language-grounded QD's last stages through the command line on the smoke pipeline (cluster-actions,
train-dt, deploy, judge with a scripted LLM recorded then replayed, report), what each leaves and how each
continues after a stop; the describe subsample and the judge summary's statistics on hand-made inputs."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.textagents.methods.test_lgqd_describe import Scripted
from tests.textagents.methods.test_lgqd_judge import GridScorer
from textagents.cli import main
from textagents.llm.record import RecordingBackend
from textagents.methods.lgqd import deploy_stage
from textagents.methods.lgqd.artifacts import Pipeline
from textagents.methods.lgqd.dataset import load_split
from textagents.methods.lgqd.deploy_stage import POLICIES, load_deployments
from textagents.methods.lgqd.describe import selected_items
from textagents.methods.lgqd.judge import expected_score_judge, landmark_order_score, llm_judge
from textagents.methods.lgqd.judge_stage import mean_and_error, paired_differences

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "lgqd" / "smoke.yaml"


def _stage(capsys, *argv: str) -> dict:
    assert main(["lgqd", *argv]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def _error(capsys, *argv: str) -> str:
    assert main(["lgqd", *argv]) == 2
    return capsys.readouterr().err


def test_describe_items_draws_a_seeded_subset_and_split_keeps_to_it():
    assert selected_items(10, None, 0) == list(range(10)) == selected_items(10, 50, 0)
    chosen = selected_items(100, 7, 3)
    assert len(chosen) == 7 == len(set(chosen)) and chosen == sorted(chosen) and max(chosen) < 100
    assert selected_items(100, 7, 3) == chosen != selected_items(100, 7, 4)


def test_mean_and_standard_error_and_paired_differences():
    stats = mean_and_error([1.0, None, 0.0, 0.5])
    assert stats["n"] == 3 and stats["undefined"] == 1 and stats["mean"] == pytest.approx(0.5)
    assert stats["se"] == pytest.approx(math.sqrt(0.25 / 3))  # sample variance 0.25, over n
    assert mean_and_error([0.3])["se"] is None and mean_and_error([None])["mean"] is None
    records = [
        {"item": 1, "policy": "dt", "x": 0.9},
        {"item": 1, "policy": "random-archive", "x": 0.4},
        {"item": 2, "policy": "dt", "x": 0.2},
        {"item": 2, "policy": "random-archive", "x": None},  # unpaired: left out
        {"item": 3, "policy": "dt", "x": 0.5},
        {"item": 3, "policy": "random-archive", "x": 0.6},
    ]
    paired = paired_differences(records, "x", "dt", "random-archive")
    assert paired["n"] == 2 and paired["mean"] == pytest.approx((0.5 - 0.1) / 2)


@pytest.fixture(scope="module")
def split_pipeline(tmp_path_factory):
    """The smoke pipeline up to its split, made once; each test works on a copy."""
    out = tmp_path_factory.mktemp("lgqd") / "smoke"
    for argv in (
        ["archive", str(SMOKE), "--out", str(out), "--no-progress"],
        ["dedupe", str(out)],
        ["annotate", str(out)],
        ["describe", str(out), "--no-progress"],
        ["split", str(out)],
    ):
        assert main(["lgqd", *argv]) == 0
    return out


def test_the_last_stages_end_to_end(split_pipeline, tmp_path, capsys, monkeypatch):

    out = tmp_path / "smoke"
    shutil.copytree(split_pipeline, out)
    assert "run `textagents lgqd cluster-actions" in _error(capsys, "train-dt", str(out))
    assert "run `textagents lgqd train-dt" in _error(capsys, "deploy", str(out), "--no-progress")
    assert "run `textagents lgqd deploy" in _error(capsys, "judge", str(out), "--no-progress")

    clusters = _stage(capsys, "cluster-actions", str(out))
    train = load_split(out, "train")
    assert clusters["steps"] == train.actions.shape[0] * train.actions.shape[1]
    centers = np.asarray(clusters["centers"])
    assert centers.shape == (2, 4) and (np.diff(centers, axis=1) > 0).all()

    trained = _stage(capsys, "train-dt", str(out))
    folder = out / "train-dt" / "dt"
    assert (folder / "policy.safetensors").is_file() and (out / "train-dt" / "tokenizer" / "tokenizer.json").is_file()
    metrics = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in metrics if m["kind"] == "train"] == [1, 2, 3, 4]
    assert [m["iteration"] for m in metrics if m["kind"] == "eval"] == [2, 4]
    assert trained["val_loss"] == metrics[-1]["val_loss"]
    assert _stage(capsys, "train-dt", str(out))["train_loss"] == trained["train_loss"]  # done: nothing more

    asked: list[tuple[str, int]] = []  # what the DT was deployed from: (description, seed)
    real_deploy = deploy_stage.deploy

    def spied_deploy(model, tokenizer, description, target, **settings):
        asked.append((description, settings["seed"]))
        return real_deploy(model, tokenizer, description, target, **settings)

    monkeypatch.setattr(deploy_stage, "deploy", spied_deploy)
    deployed = _stage(capsys, "deploy", str(out), "--no-progress")
    monkeypatch.undo()
    test = load_split(out, "test")
    assert deployed["items"] == len(test.items) == 3
    records = load_deployments(Pipeline(out))
    assert [(r["item"], r["policy"]) for r in records] == [(int(i), p) for i in test.items for p in POLICIES]
    for record in records:
        row = test.items.tolist().index(record["item"])
        assert record["description"] == test.descriptions[row]
        np.testing.assert_allclose(record["target_bd"], test.bd[row])
        assert np.hypot(*np.subtract(record["bd"], record["target_bd"])) == pytest.approx(record["bd_error"])
        assert len(record["trajectory"]) == 60 and record["trajectory"][-1] == pytest.approx(record["bd"], abs=1e-4)
        if record["policy"] == "dt":
            assert record["source_item"] is None and len(record["trial_errors"]) == 2
        elif record["policy"] == "dt-other-description":  # given the next test item's text, judged on this one's
            assert record["source_item"] == test.items[(row + 1) % 3] and len(record["trial_errors"]) == 2
        elif record["policy"] == "random-archive":
            assert record["source_item"] in train.items.tolist()
        else:
            assert record["source_item"] == record["item"] and record["bd_error"] == pytest.approx(0, abs=1e-4)
    # per item the DT twice with the same draws: from its description, then from the next item's
    texts = test.descriptions
    assert [text for text, _ in asked] == [t for row in range(3) for t in (texts[row], texts[(row + 1) % 3])]
    assert all(asked[i][1] == asked[i + 1][1] for i in range(0, 6, 2)) and asked[0][1] != asked[2][1]
    lines = (out / "deploy" / "deployments.jsonl").read_text().splitlines()
    (out / "deploy" / "deployments.jsonl").write_text("\n".join(lines[:6]) + "\n")  # stopped in the second item
    _stage(capsys, "deploy", str(out), "--no-progress")
    again = load_deployments(Pipeline(out))
    assert [(r["item"], r["policy"]) for r in again] == [(r["item"], r["policy"]) for r in records]
    assert [r["trajectory"] for r in again] == [r["trajectory"] for r in records]  # seeded per item

    # the judge: a scripted LLM recorded, then replayed through the command line
    config = Pipeline(out).config()
    answers = [f"The robot went somewhere.\nscore=={0.1 * k:.1f}" for k in range(len(records) - 1)] + ["no score"]
    calls = tmp_path / "judge_calls.jsonl"
    cases = [(r["description"], r["annotation"]) for r in records]
    llm_judge(RecordingBackend(Scripted(answers), calls), cases, max_tokens=config.judge_max_tokens)
    judged = _stage(capsys, "judge", str(out), "--no-progress", "--llm-replay", str(calls))
    judgements = [json.loads(line) for line in (out / "judge" / "judgements.jsonl").read_text().splitlines()]
    assert [j["llm"] for j in judgements] == pytest.approx([0.1 * k for k in range(len(records) - 1)] + [None])
    assert [j["deterministic"] for j in judgements] == [
        landmark_order_score(r["description"], r["annotation"]) for r in records
    ]
    assert judged["judge_model"] == "scripted" and judged["cases"] == len(records)
    assert judged["policies"]["described-policy"]["llm_unparsed"] == 1
    dt_llm = [j["llm"] for j in judgements if j["policy"] == "dt"]
    assert judged["policies"]["dt"]["llm"]["mean"] == pytest.approx(np.mean(dt_llm))
    assert judged["agreement"]["pairs"] == len(records) - 1 - judged["agreement"]["deterministic_undefined"] + (
        judgements[-1]["deterministic"] is None
    )
    assert len((out / "llm_calls.jsonl").read_text().splitlines()) == len(records)

    # the expected-score judge on the same deployments: score calls recorded, then replayed
    scored_out = tmp_path / "expected"
    shutil.copytree(out, scored_out, ignore=shutil.ignore_patterns("judge", "llm_calls.jsonl"))
    certain = [-50.0] * 10 + [0.0]  # all the mass on "1.0"
    expected_calls = tmp_path / "expected_calls.jsonl"
    expected_score_judge(RecordingBackend(GridScorer([certain] * len(records)), expected_calls), cases)
    replay = ("--llm-replay", str(expected_calls), "--judge-scoring", "expected")
    scored = _stage(capsys, "judge", str(scored_out), "--no-progress", *replay)
    assert scored["judge_scoring"] == "expected" and scored["cases"] == len(records)
    assert all(p["llm"]["mean"] == pytest.approx(1.0) and p["llm_unparsed"] == 0 for p in scored["policies"].values())

    report = _stage(capsys, "report", str(out))
    text = (out / "report" / "report.md").read_text()
    assert set(report["figures"]) == {"agreement.png", "archive.png", "scores.png", "training.png", "trajectories.png"}
    assert "| dt | 3 |" in text and "| random-archive | 3 |" in text and "not shown here" in text
    assert "conditioned on the description and the target descriptor" in text
    assert "| dt-other-description | 3 |" in text and "dt minus dt-other-description, paired by item" in text
    assert f"Judge: `scripted`. {judged['agreement']['pairs']} cases scored by both" in text


def test_train_dt_trains_the_same_policy_whatever_torchs_generator_held_before(split_pipeline, tmp_path, capsys):
    import torch
    from safetensors.torch import load_file

    policies = []
    for state in (1, 2):
        out = tmp_path / f"pipeline{state}"
        shutil.copytree(split_pipeline, out)
        _stage(capsys, "cluster-actions", str(out))
        torch.manual_seed(state)  # as another process, or earlier work in this one, would leave it
        _stage(capsys, "train-dt", str(out))
        policies.append(load_file(out / "train-dt" / "dt" / "policy.safetensors"))
    assert policies[0].keys() == policies[1].keys()
    assert all(torch.equal(policies[0][name], policies[1][name]) for name in policies[0])
