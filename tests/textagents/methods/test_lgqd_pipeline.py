"""Language-grounded QD's smoke pipeline end to end through the command line (archive, dedupe, annotate,
describe, split), what each stage leaves, and the dedupe and split rules on hand-made inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textagents.cli import main
from textagents.methods.lgqd.artifacts import Pipeline, read_npz
from textagents.methods.lgqd.dataset import load_split
from textagents.methods.lgqd.dedupe import kept_rows
from textagents.methods.lgqd.policies import layer_sizes, population
from textagents.methods.lgqd.split import split_items
from textenvs.envs.fastsim.captioner import paper_position
from textenvs.envs.fastsim.simulator import load_world

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "lgqd" / "smoke.yaml"


def test_dedupe_drops_entries_near_an_earlier_kept_one():
    bd = np.array([[0.0, 0.0], [0.0, 0.0], [0.8, 0.0], [1.6, 0.0], [10.0, 10.0]])
    assert kept_rows(bd, None).tolist() == [0, 1, 2, 3, 4]
    assert kept_rows(bd, 0.0).tolist() == [0, 2, 3, 4]  # only the exact twin
    assert kept_rows(bd, 1.0).tolist() == [0, 3, 4]  # 1.6 is 0.8 from a dropped entry, 1.6 from the kept one
    assert kept_rows(np.zeros((0, 2)), 1.0).tolist() == []


def test_splits_are_disjoint_cover_everything_and_follow_the_seed():
    splits = split_items(100, (0.8, 0.1, 0.1), seed=3)
    assert [len(splits[name]) for name in ("train", "val", "test")] == [80, 10, 10]
    assert sorted(splits["train"] + splits["val"] + splits["test"]) == list(range(100))
    assert split_items(100, (0.8, 0.1, 0.1), seed=3) == splits
    assert split_items(100, (0.8, 0.1, 0.1), seed=4)["test"] != splits["test"]
    assert [len(v) for v in split_items(16, (0.8, 0.1, 0.1), 0).values()] == [12, 1, 3]


def _stage(capsys, *argv: str) -> dict:
    assert main(["lgqd", *argv]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_the_smoke_pipeline_end_to_end(tmp_path, capsys):
    out = tmp_path / "lgqd"
    assert main(["lgqd", "split", str(out)]) == 2
    assert "not an lgqd pipeline folder" in capsys.readouterr().err
    wrong_env = tmp_path / "wrong.yaml"
    wrong_env.write_text(SMOKE.read_text() + "env_id: BabyAI-Text-GoToLocal-v0\n")
    assert main(["lgqd", "archive", str(wrong_env), "--out", str(out)]) == 2
    assert "is not a fastsim env" in capsys.readouterr().err and not out.exists()
    archive = _stage(capsys, "archive", str(SMOKE), "--out", str(out), "--no-progress")
    assert archive["entries"] == 20 and archive["generations"] == 6
    assert main(["lgqd", "annotate", str(out)]) == 2
    assert "run `textagents lgqd dedupe" in capsys.readouterr().err

    dedupe = _stage(capsys, "dedupe", str(out))
    kept = read_npz(out / "dedupe" / "archive.npz")
    assert dedupe["entries_out"] == len(kept["bd"]) < 20  # an individual archived twice is dropped
    assert len(np.unique(kept["bd"], axis=0)) == len(kept["bd"])

    annotate = _stage(capsys, "annotate", str(out))
    rollouts = read_npz(out / "annotate" / "rollouts.npz")
    items = annotate["items"]
    assert rollouts["observations"].shape == (items, 60, 5) and rollouts["actions"].shape == (items, 60, 2)
    np.testing.assert_allclose(rollouts["bd"], kept["bd"], atol=1e-4)
    np.testing.assert_array_equal(rollouts["positions"][:, -1], rollouts["bd"].astype(np.float32))
    config = Pipeline(out).config()
    policies = population(kept["genomes"], layer_sizes(10, 3), config.output_activation)
    for t in (0, 30, 59):  # each stored action is the policy's answer to the stored observation
        np.testing.assert_allclose(rollouts["actions"][:, t], policies.act(rollouts["observations"][:, t]), atol=1e-6)
    annotations = [json.loads(line)["annotation"] for line in (out / "annotate" / "annotations.jsonl").open()]
    world = load_world("household")
    assert [p["timestep"] for p in annotations[0]] == [0, 40, 59]
    assert annotations[0][-1]["pos"] == pytest.approx(paper_position(world, *rollouts["bd"][0]))

    describe = _stage(capsys, "describe", str(out), "--no-progress")
    assert describe["described"] == items and describe["styles"] == {"template": items}
    split = _stage(capsys, "split", str(out))
    assert split["train"] + split["val"] + split["test"] == items
    episodes = {name: load_split(out, name) for name in ("train", "val", "test")}
    seen = np.concatenate([e.items for e in episodes.values()])
    assert sorted(seen.tolist()) == list(range(items))
    test = episodes["test"]
    assert len(test.descriptions) == len(test.items) == len(test.annotations) == test.bd.shape[0]
    np.testing.assert_array_equal(test.observations, rollouts["observations"][test.items])
    assert all(d.startswith(("Start", "Stay")) for d in test.descriptions)
