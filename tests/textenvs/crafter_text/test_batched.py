"""``CrafterBatch`` and ``CrafterTextVectorEnv`` against ``DeterministicCrafter`` and ``CrafterTextEnv``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import textenvs
from textenvs.envs.crafter_text import batch_kernels
from textenvs.envs.crafter_text.batch_rules import KIND_NAMES
from textenvs.envs.crafter_text.batched import CrafterBatch
from textenvs.envs.crafter_text.constants import ACHIEVEMENTS, COMMANDS, INVENTORY_ITEMS
from textenvs.envs.crafter_text.env import CrafterTextEnv
from textenvs.envs.crafter_text.game import DeterministicCrafter


def _objects(game: DeterministicCrafter) -> list[tuple[str, int, int, int]]:
    return [(type(o).__name__.lower(), int(o.pos[0]), int(o.pos[1]), int(o.health)) for o in game.world.objects]


def _assert_same(batch: CrafterBatch, w: int, game: DeterministicCrafter, where: str) -> None:
    player = game.player
    assert np.array_equal(batch.semantic([w])[0], game.semantic()), where
    assert np.array_equal(batch.materials[w], game.world._mat_map), where
    assert batch.objects(w) == _objects(game), where
    assert batch.inventory[w].tolist() == [player.inventory[k] for k in INVENTORY_ITEMS], where
    assert batch.achievements[w].tolist() == [player.achievements[k] for k in ACHIEVEMENTS], where
    assert tuple(batch.facing[w]) == tuple(player.facing) and batch.sleeping[w] == player.sleeping, where
    assert batch.life[w].tolist() == [player._hunger, player._thirst, player._fatigue, player._recover], where
    _, key, position, *_ = game.world.random.get_state()
    assert batch.mt_pos[w] == position and np.array_equal(batch.mt[w], key), where


def _biased_actions(rng: np.random.Generator, size: int) -> np.ndarray:
    """Mostly moves and "do" (so the player travels, collects and fights), sometimes the rest."""
    weights = np.array([1, 6, 6, 6, 6, 12, 1, 2, 2, 1, 2, 1, 1, 1, 1, 1, 1], float)
    return rng.choice(len(COMMANDS), size=size, p=weights / weights.sum())


def test_uniform_and_randint_draw_as_randomstate():
    random = np.random.RandomState(123)
    _, key, position, *_ = random.get_state()
    mt, mt_pos = key[None].copy(), np.array([position])
    for n in (1, 2, 3, 4, 5, 7, 64, 100, 143, 2**20 + 3):
        for _ in range(300):  # crosses several MT19937 twists
            assert batch_kernels._randint(mt, mt_pos, 0, n) == random.randint(0, n)
            assert batch_kernels._uniform(mt, mt_pos, 0) == random.uniform()
    _, key, position, *_ = random.get_state()
    assert mt_pos[0] == position and np.array_equal(mt[0], key)


def test_batch_follows_deterministic_crafter_with_random_play():
    """Four worlds, 1,500 steps each of mostly moves and "do", dying and starting again: every step the
    semantic map, materials, objects (kind, position, health, order), inventory, achievements, vitals' counters,
    reward, death and RNG state equal DeterministicCrafter's."""
    seeds, steps = [3, 14, 15, 92], 1500
    batch = CrafterBatch(len(seeds), length=10000)
    batch.reset_worlds(range(len(seeds)), seeds)
    games = [DeterministicCrafter(length=10000) for _ in seeds]
    for game, seed in zip(games, seeds, strict=True):
        game.start_episode(seed, 0)
    actions = _biased_actions(np.random.default_rng(0), (steps, len(seeds)))
    kinds_seen, deaths, unlocked = set(), 0, set()
    for t, row in enumerate(actions):
        rewards, dead = batch.step(row)
        for w, game in enumerate(games):
            _obs, reward, _done, _info = game.step(int(row[w]))
            assert rewards[w] == reward and dead[w] == (game.player.health <= 0), f"step {t + 1}, world {w}"
            _assert_same(batch, w, game, f"step {t + 1}, world {w}")
            kinds_seen |= {kind for kind, *_ in batch.objects(w)}
            unlocked |= {name for name, n in game.player.achievements.items() if n}
            if dead[w]:
                deaths += 1
                game.start_episode(1000 + t, 0)
                batch.reset_worlds([w], [1000 + t])
    # the rollout met what the rules are about: every kind of object, deaths, a range of achievements
    assert kinds_seen == set(KIND_NAMES), kinds_seen
    assert deaths >= 1 and len(unlocked) >= 6, (deaths, unlocked)


def test_batch_follows_the_expert_through_the_tech_tree():
    """The expert's actions from a Crafter-Text episode, replayed in a batch world from the same seed, give the
    same game step for step (tables, pickaxes, swords, furnaces, plants, sleeping)."""
    env = CrafterTextEnv(action_mode="discrete", length=2500)
    expert = env.expert()
    obs, info = env.reset(seed=4)
    expert.reset(obs, info)
    batch = CrafterBatch(1, length=2500)
    batch.reset_worlds([0], [_world_seed(4)])
    _assert_same(batch, 0, env.game, "reset")
    for t in range(2500):
        action = int(expert.act(obs, info))  # a Discrete(17) index in crafter's order
        obs, reward, terminated, truncated, info = env.step(action)
        rewards, dead = batch.step([action])
        assert rewards[0] == reward and dead[0] == terminated, f"step {t + 1}"
        _assert_same(batch, 0, env.game, f"step {t + 1}")
        if terminated or truncated:
            break
    reached = {name for name, n in info["achievements"].items() if n}
    assert {"place_table", "make_wood_pickaxe", "collect_stone", "place_furnace"} <= reached, reached


def _world_seed(seed: int) -> int:
    """The world seed ``CrafterTextEnv.reset(seed=seed)`` draws."""
    return int(gym.utils.seeding.np_random(seed)[0].integers(2**31 - 1, size=2)[0])


def test_compacting_the_objects_changes_nothing():
    """Dropping removed objects (what the batch does when its arrays fill) keeps the game identical."""
    plain, compacted = CrafterBatch(2), CrafterBatch(2)
    for batch in (plain, compacted):
        batch.reset_worlds([0, 1], [5, 6])
    for row in _biased_actions(np.random.default_rng(1), (600, 2)):
        for w in range(2):
            batch_kernels.compact(compacted._state(), w)
        assert [a.tolist() for a in plain.step(row)] == [a.tolist() for a in compacted.step(row)]
        assert np.array_equal(plain.semantic(), compacted.semantic())
        assert [plain.objects(w) for w in range(2)] == [compacted.objects(w) for w in range(2)]
    assert (compacted.count < plain.count).any()  # something was removed and dropped


def test_the_object_arrays_grow_when_full():
    small, large = CrafterBatch(1, capacity=1), CrafterBatch(1)
    small.reset_worlds([0], [8])
    large.reset_worlds([0], [8])
    assert small.capacity > small.count[0]
    for row in _biased_actions(np.random.default_rng(2), (200, 1)):
        assert [a.tolist() for a in small.step(row)] == [a.tolist() for a in large.step(row)]
    assert small.objects(0) == large.objects(0)


def _assert_same_metrics(got: np.ndarray, want: dict, mask: np.ndarray, where: str) -> None:
    """``got``: our per-env metrics dicts; ``want``: SyncVectorEnv's (it turns the dicts into a dict of arrays)."""
    for r in np.flatnonzero(mask):
        keys = ("num_achievements", "length", "return")
        assert [got[r][k] for k in keys] == [want[k][r] for k in keys], where


@pytest.mark.parametrize(
    ("caption_style", "autoreset_mode"),
    [
        ("smartplay", AutoresetMode.NEXT_STEP),
        ("balrog", AutoresetMode.NEXT_STEP),
        ("smartplay", AutoresetMode.SAME_STEP),
    ],
)
def test_vector_env_equals_sync_vector_env_with_autoreset(caption_style, autoreset_mode):
    """Three envs of 60 steps (two episodes each): observations, rewards, ends and infos equal Gymnasium's
    SyncVectorEnv of CrafterTextEnv in the same autoreset mode, unknown commands included."""
    kwargs = {"length": 60, "caption_style": caption_style}
    fast = textenvs.make_vec("Crafter-Text-v0", 3, autoreset_mode=autoreset_mode, **kwargs)
    sync = textenvs.make_vec(
        "Crafter-Text-v0", 3, vectorization_mode="sync", vector_kwargs={"autoreset_mode": autoreset_mode}, **kwargs
    )
    assert type(fast).__name__ == "CrafterTextVectorEnv" and fast.metadata["autoreset_mode"] == autoreset_mode
    fast_obs, fast_info = fast.reset(seed=21)
    sync_obs, sync_info = sync.reset(seed=21)
    assert fast_obs["text"] == sync_obs["text"] and fast_obs["mission"] == sync_obs["mission"]
    rng = np.random.default_rng(3)
    ends = 0
    for t in range(130):
        commands = [COMMANDS[a] for a in _biased_actions(rng, 3)]
        if t % 17 == 0:
            commands[t % 3] = "dance"
        fast_step = fast.step(tuple(commands))
        sync_step = sync.step(tuple(commands))
        assert fast_step[0]["text"] == sync_step[0]["text"], f"step {t}"
        for got, want in zip(fast_step[1:4], sync_step[1:4], strict=True):
            assert np.array_equal(got, want), f"step {t}"
        fast_info, sync_info = fast_step[4], sync_step[4]
        for r in range(3):
            assert fast_info["achievements"][r].tolist() == [sync_info["achievements"][k][r] for k in ACHIEVEMENTS]
            assert fast_info["inventory"][r].tolist() == [sync_info["inventory"][k][r] for k in INVENTORY_ITEMS]
        assert fast_info["invalid_action"].tolist() == sync_info["invalid_action"].tolist()
        if caption_style == "balrog":
            assert list(fast_info["short_term_context"]) == list(sync_info["short_term_context"])
        assert ("episode_metrics" in fast_info) == ("episode_metrics" in sync_info), f"step {t}"
        if "episode_metrics" in sync_info:
            _assert_same_metrics(
                fast_info["episode_metrics"], sync_info["episode_metrics"], sync_info["_episode_metrics"], f"step {t}"
            )
        assert ("final_obs" in fast_info) == ("final_obs" in sync_info), f"step {t}"
        if "final_obs" in sync_info:
            ended = sync_info["_final_obs"]
            ends += int(ended.sum())
            assert fast_info["_final_obs"].tolist() == ended.tolist() == fast_info["_final_info"].tolist()
            for r in np.flatnonzero(ended):
                assert fast_info["final_obs"][r] == sync_info["final_obs"][r], f"step {t}"
            final, sync_final = fast_info["final_info"], sync_info["final_info"]
            _assert_same_metrics(final["episode_metrics"], sync_final["episode_metrics"], ended, f"step {t}")
    assert ends == (6 if autoreset_mode == AutoresetMode.SAME_STEP else 0)
    fast.close()
    sync.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"obs_mode": "pixels"}, "obs_mode='pixels' is not batched"),
        ({"caption_style": "nle"}, "'smartplay', 'ellm', 'balrog'"),
        ({"action_mode": "native"}, "'text', 'discrete'"),
        (
            {"autoreset_mode": AutoresetMode.DISABLED},
            "autoreset_mode='Disabled' is not valid; choose one of 'NextStep', 'SameStep'",
        ),
    ],
)
def test_vector_env_bad_arguments_name_the_valid_ones(kwargs, message):
    with pytest.raises(ValueError, match=message):
        textenvs.make_vec("Crafter-Text-v0", 2, **kwargs)


def test_batch_refuses_bad_actions_and_stepping_past_the_length():
    batch = CrafterBatch(2, length=3)
    batch.reset_worlds([0, 1], [1, 2])
    with pytest.raises(ValueError, match=r"action 17 is not valid; crafter's actions are 0\.\.16"):
        batch.step([0, 17])
    for _ in range(3):
        batch.step([0, 0])
    with pytest.raises(ValueError, match="3-step length"):
        batch.step([0, 0])
    batch.step([0, 0], active=[False, False])  # inactive worlds may sit at their length
