"""Our vectorized world generation against crafter 1.8.3's own ``generate_world``: the same worlds, bit for bit."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

crafter = pytest.importorskip("crafter")

from crafter import engine, objects  # noqa: E402
from crafter import worldgen as crafter_worldgen  # noqa: E402

from textenvs.envs.crafter_text import worldgen  # noqa: E402
from textenvs.envs.crafter_text.game import AREA  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[3]
#: Small seeds and seeds like the env's (it draws world seeds up to 2**31 - 2).
SEEDS = [0, 1, 2, *np.random.default_rng(2026).integers(0, 2**31 - 1, 28).tolist()]


def generated_world(seed: int, generate) -> engine.World:
    """A fresh world seeded ``seed``, with the player in the middle, filled by ``generate``."""
    world = engine.World(AREA, crafter.constants.materials, (12, 12))
    world.reset(seed=seed)
    player = objects.Player(world, (AREA[0] // 2, AREA[1] // 2))
    world.add(player)
    generate(world, player)
    return world


def world_fingerprint(world: engine.World) -> dict:
    """Everything generation decides: materials, objects in creation order, chunks, and the RNG afterwards."""
    return {
        "materials": world._mat_map.tolist(),
        "material_ids": dict(world._mat_ids),
        "object_map": world._obj_map.tolist(),
        "objects": [(type(obj).__name__, obj.pos.tolist(), obj.health) for obj in world._objects[1:]],
        "chunks": sorted(
            (key, sorted(int(world._obj_map[tuple(o.pos)]) for o in objs)) for key, objs in world._chunks.items()
        ),
        "rng_state": [value.tolist() if isinstance(value, np.ndarray) else value for value in world.random.get_state()],
        "next_draws": [*world.random.uniform(size=8).tolist(), world.random.randint(0, 2**31 - 1)],
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_worlds_are_crafters_own(seed):
    ours = world_fingerprint(generated_world(seed, worldgen.generate_world))
    original = world_fingerprint(generated_world(seed, crafter_worldgen.generate_world))
    for key, value in original.items():
        assert ours[key] == value, f"seed {seed}: {key} differs from crafter's generate_world"


def test_worlds_hold_every_material_and_creature_generation_makes():
    """The seeds above cover every branch of crafter's chain (so the comparison checks each of them)."""
    names = set()
    kinds = set()
    for seed in SEEDS[:10]:
        world = generated_world(seed, worldgen.generate_world)
        names |= {world._mat_names[i] for i in np.unique(world._mat_map).tolist()}
        kinds |= {type(obj).__name__ for obj in world._objects[1:]}
    assert names == set(worldgen.MATERIAL_NAMES)
    assert kinds == {"Player", "Cow", "Zombie", "Skeleton"}


_WITHOUT_NUMBA = """
import hashlib, sys
sys.modules["numba"] = None
from tests.textenvs.crafter_text.test_worldgen import generated_world, world_fingerprint
from textenvs.core.jit import HAVE_NUMBA
from textenvs.envs.crafter_text import worldgen
assert not HAVE_NUMBA
print(hashlib.sha256(repr(world_fingerprint(generated_world(SEED, worldgen.generate_world))).encode()).hexdigest())
"""


def test_without_numba_the_pure_python_fallback_gives_crafters_world():
    seed = SEEDS[5]
    code = f"SEED = {seed}\n" + _WITHOUT_NUMBA
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    original = world_fingerprint(generated_world(seed, crafter_worldgen.generate_world))
    assert run.stdout.strip() == hashlib.sha256(repr(original).encode()).hexdigest()
