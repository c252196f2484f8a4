"""Language-grounded QD's archive stage: novelty against a brute-force reference, mutation bounds, the
archive rules on hand-made descriptors, coverage, and a resumed search equal to an uninterrupted one."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from textagents.methods.core.config import load_config
from textagents.methods.lgqd import archive_stage
from textagents.methods.lgqd.artifacts import read_npz
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.lgqd.coverage import coverage, reachable_cells
from textagents.methods.lgqd.novelty import (
    archive_additions,
    archive_survivors,
    mutate,
    novelty,
    select_most_novel,
)
from textagents.methods.lgqd.policies import genome_size, initial_genomes, layer_sizes
from textagents.methods.lgqd.search import NoveltySearch
from textenvs.envs.fastsim.simulator import load_world

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "lgqd" / "smoke.yaml"


def brute_force_novelty(queries: np.ndarray, reference: np.ndarray, k: int) -> np.ndarray:
    distances = np.sqrt(((queries[:, None, :] - reference[None, :, :]) ** 2).sum(-1))
    return np.sort(distances, axis=1)[:, 1:k].mean(axis=1)


def test_novelty_is_the_mean_distance_to_the_k_nearest_others():
    rng = np.random.default_rng(0)
    archive = rng.uniform(0, 600, (300, 2))
    pool = np.concatenate([rng.uniform(0, 600, (95, 2)), archive[:5]])  # 5 individuals already archived
    reference = np.concatenate([archive, pool])
    expected = brute_force_novelty(pool, reference, 15)
    np.testing.assert_allclose(novelty(pool, reference, 15), expected, rtol=1e-12)
    # a lone point next to a cluster: its 2 nearest others are the cluster's two closest points
    points = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0], [100.0, 0.0]])
    assert novelty(points, points, 3)[0] == pytest.approx(7.5)


def test_the_most_novel_are_selected_highest_first():
    assert select_most_novel(np.array([0.3, 2.0, 1.0, 2.0, 0.1]), 3).tolist() == [1, 3, 2]


def test_mutation_stays_in_bounds_is_seeded_and_leaves_the_global_random_alone():
    genomes = np.random.default_rng(1).uniform(-1, 1, (20, 302))
    random.seed(123)
    before = random.getstate()
    rng = random.Random(7)
    mutated = genomes
    for _ in range(30):
        mutated = mutate(mutated, eta=5.0, low=-1.0, high=1.0, indpb=1.0, rng=rng)
    assert mutated.min() >= -1.0 and mutated.max() <= 1.0
    assert np.abs(mutated - genomes).mean() > 0.1
    assert random.getstate() == before
    again = mutate(genomes, 5.0, -1.0, 1.0, 0.1, random.Random(7))
    assert np.array_equal(again, mutate(genomes, 5.0, -1.0, 1.0, 0.1, random.Random(7)))
    changed = (again != genomes).mean()
    assert 0.05 < changed < 0.15  # indpb 0.1 of the genes


def test_archive_additions_draw_at_most_the_limit_and_keep_only_novel_ones():
    rng = random.Random(0)
    everyone_novel = [10.0] * 100
    for _ in range(50):
        drawn = archive_additions(everyone_novel, 6, 0.5, rng)
        assert len(drawn) == 6 and len(set(drawn)) == 6
    scores = [0.5, 0.4, 0.6, 3.0]  # threshold 0.5 is strict: 0.5 itself stays out
    assert sorted(archive_additions(scores, 4, 0.5, rng)) == [2, 3]
    assert archive_additions([0.1] * 10, 6, 0.5, rng) == []


def test_the_archive_is_cut_back_at_random_once_it_reaches_its_cap():
    rng = random.Random(0)
    assert archive_survivors(9, 10, rng) is None
    kept = archive_survivors(16, 10, rng)
    assert kept is not None and len(set(kept)) == 10 and max(kept) < 16
    assert sorted(archive_survivors(10, 10, rng)) == list(range(10))  # at the cap: kept, reshuffled


def test_the_search_obeys_the_rules_generation_by_generation():
    config = load_config(LGQDConfig, SMOKE)
    search = NoveltySearch(config)
    search.start()
    assert search.parents.genomes.shape == (config.population, 302)
    assert genome_size(layer_sizes(10, 3)) == 302
    sizes = []
    for generation in range(1, config.generations + 1):
        before = len(search.archive)
        metrics = search.step()
        added = search.archive.added == generation
        assert metrics["added"] <= config.archive_additions
        assert (search.archive.novelty[added] > config.archive_threshold).all()
        assert len(search.archive) == min(before + metrics["added"], config.archive_max)
        if before + metrics["added"] < config.archive_max:  # no cut: every addition is still there
            assert added.sum() == metrics["added"]
        assert set(search.archive.ids[added].tolist()) <= set(search.parents.ids.tolist()) | set(
            range(search.next_id - config.offspring, search.next_id)
        )
        sizes.append(len(search.archive))
    assert sizes[-1] == config.archive_max  # the smoke's cap of 20 is reached and held
    assert search.parents.genomes.min() >= -1 and search.parents.genomes.max() <= 1


def test_initial_weights_follow_torch_linear_bounds():
    genome = np.asarray(initial_genomes((5, 10, 2), 1, random.Random(0))[0])
    first_layer, second_layer = genome[:60], genome[60:]
    assert np.abs(first_layer).max() <= 5**-0.5 and np.abs(second_layer).max() <= 10**-0.5
    assert np.abs(first_layer).max() > 10**-0.5  # the first layer's wider bound is used


def test_coverage_counts_reachable_cells_holding_a_descriptor():
    world = load_world("household")
    reachable = reachable_cells(world, 20)
    assert 0 < reachable.sum() < 400 and not reachable[0].any()  # the map's border row is wall
    start = np.array([world.layout.start[:2]])
    assert coverage(start, reachable, 600.0) == pytest.approx(1 / reachable.sum())
    assert coverage(np.repeat(start, 5, axis=0), reachable, 600.0) == pytest.approx(1 / reachable.sum())
    rows, columns = np.nonzero(reachable)
    centres = np.stack([(columns + 0.5) * 30.0, (rows + 0.5) * 30.0], axis=1)
    assert coverage(centres, reachable, 600.0) == 1.0
    assert coverage(np.zeros((0, 2)), reachable, 600.0) == 0.0


def _progress(folder: Path) -> list[dict]:
    lines = [json.loads(line) for line in (folder / "archive" / "progress.jsonl").read_text().splitlines()]
    return [{k: v for k, v in line.items() if k != "seconds"} for line in lines]


def test_a_stopped_and_resumed_search_ends_with_the_uninterrupted_archive(tmp_path, monkeypatch):
    whole = archive_stage.run_archive(SMOKE, tmp_path / "whole", progress=False)
    assert whole["entries"] == 20

    original_step = NoveltySearch.step

    def stop_at_five(self):
        if self.generation == 4:  # generation 5 never finishes; the checkpoint of generation 4 holds
            raise KeyboardInterrupt
        return original_step(self)

    monkeypatch.setattr(NoveltySearch, "step", stop_at_five)
    with pytest.raises(KeyboardInterrupt):
        archive_stage.run_archive(SMOKE, tmp_path / "stopped", progress=False)
    monkeypatch.setattr(NoveltySearch, "step", original_step)
    assert json.loads((tmp_path / "stopped" / "archive" / "checkpoint.json").read_text())["generation"] == 4
    assert not (tmp_path / "stopped" / "archive" / "archive.npz").exists()
    archive_stage.run_archive(SMOKE, tmp_path / "stopped", resume=True, progress=False)

    first, second = (read_npz(tmp_path / name / "archive" / "archive.npz") for name in ("whole", "stopped"))
    assert first.keys() == second.keys()
    for key in first:
        assert np.array_equal(first[key], second[key]), key
    assert _progress(tmp_path / "whole") == _progress(tmp_path / "stopped")
    assert [r["generation"] for r in _progress(tmp_path / "stopped")] == list(range(1, 7))
    assert (tmp_path / "stopped" / "archive" / "progress.png").is_file()


def test_a_pipeline_folder_is_not_overwritten_and_resumes_only_with_its_config(tmp_path):
    from textagents.methods.core.run_dir import RunDirError

    archive_stage.run_archive(SMOKE, tmp_path / "run", progress=False)
    with pytest.raises(RunDirError, match="not empty"):
        archive_stage.run_archive(SMOKE, tmp_path / "run", progress=False)
    other = tmp_path / "other.yaml"
    other.write_text(SMOKE.read_text().replace("generations: 6", "generations: 7"))
    with pytest.raises(RunDirError, match="generations: 6 -> 7"):
        archive_stage.run_archive(other, tmp_path / "run", resume=True, progress=False)
    done = archive_stage.run_archive(SMOKE, tmp_path / "run", resume=True, progress=False)
    assert done["entries"] == 20
