"""``textenvs dataset create``: Minari and Hugging Face parquet datasets of seeded episodes, read back equal to
a direct rollout, byte-identical when made twice, with a dataset card."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

from tests.yaml_bomb import alias_bomb
from textenvs.cli import main
from textenvs.data import YAMLInputError
from textenvs.testing.rollout import canonical
from textenvs.trajectories import create_dataset, read_dataset
from textenvs.trajectories.card import read_card_info
from textenvs.trajectories.cli import parse_env_kwarg
from textenvs.trajectories.hf_format import COLUMNS, DATA_FILE

from .corridor_env import CORRIDOR_ID
from .test_install import _dependency_closure

pytest.importorskip("minari")
pytest.importorskip("datasets")

BABYAI = "BabyAI-Text-GoToLocal-v0"
FORMATS = ("hf", "minari")


def direct_rollout(env_id: str, seed: int, **kwargs) -> dict:
    """The expert's episode from ``reset(seed=seed)``, played here without textenvs.trajectories."""
    env = gym.make(env_id, **kwargs)
    expert = env.unwrapped.expert()
    obs, info = env.reset(seed=seed)
    expert.reset(obs, info)
    observations, actions, rewards = [obs], [], []
    done = False
    while not done:
        action = expert.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(float(reward))
        done = terminated or truncated
    env.close()
    keys = observations[0].keys()
    by_key = {k: [o[k] for o in observations] for k in keys}
    metrics = info["episode_metrics"]
    return canonical({"observations": by_key, "actions": actions, "rewards": rewards, "metrics": metrics})


def as_rollout(episode) -> dict:
    fields = dataclasses.asdict(episode)
    return canonical({k: fields[k] for k in ("observations", "actions", "rewards", "metrics")})


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", FORMATS)
def test_dataset_reads_back_as_the_direct_rollout_and_is_byte_identical_when_made_again(tmp_path, fmt):
    out = tmp_path / "expert"
    args = ["dataset", "create", BABYAI, "--episodes", "3", "--seed", "7", "--format", fmt, "--out", str(out)]
    assert main(args) == 0
    dataset = read_dataset(out)
    assert dataset.info.seeds == (7, 8, 9) and dataset.info.format == fmt and dataset.info.policy == "expert"
    assert len(dataset.episodes) == 3
    assert dataset.info.steps == sum(len(e) for e in dataset.episodes)
    for episode, seed in zip(dataset.episodes, (7, 8, 9), strict=True):
        assert episode.seed == seed
        assert as_rollout(episode) == direct_rollout(BABYAI, seed)
        assert len(episode.infos["admissible_commands"]) == len(episode) + 1
        assert episode.infos["success"][-1] is True

    again = tmp_path / "again"
    create_dataset(BABYAI, again, episodes=3, seed=7, format=fmt)
    assert files_of(out) == files_of(again)
    other = tmp_path / "other_seed"
    create_dataset(BABYAI, other, episodes=3, seed=8, format=fmt)
    assert files_of(out) != files_of(other)
    assert read_dataset(out, limit=1).episodes[0].seed == 7


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_policy_with_images_round_trips_losslessly(tmp_path, fmt):
    kwargs = {"obs_mode": "text+pixels"}
    out = tmp_path / "random"
    info = create_dataset(CORRIDOR_ID, out, episodes=2, policy="random", format=fmt, seed=3, env_kwargs=kwargs)
    episodes = read_dataset(out).episodes
    assert info.steps == sum(len(e) for e in episodes) and info.env_kwargs == kwargs
    image = episodes[0].observations["image"][0]
    assert image.shape == (8, 40, 3) and image.dtype.name == "uint8" and image.any()
    commands = {"go left", "go right", "wait"}
    assert all(set(e.actions) <= commands for e in episodes)
    env = gym.make(CORRIDOR_ID, **kwargs)
    obs, _ = env.reset(seed=3)
    assert canonical(obs) == canonical({k: v[0] for k, v in episodes[0].observations.items()})
    create_dataset(CORRIDOR_ID, tmp_path / "again", episodes=2, policy="random", format=fmt, seed=3, env_kwargs=kwargs)
    assert files_of(out) == files_of(tmp_path / "again")


class Wait:
    """A policy of the expert protocol that always waits."""

    def reset(self, obs, info) -> None:
        pass

    def act(self, obs, info) -> str:
        return "wait"


def test_any_policy_of_the_protocol_can_be_exported_under_its_name(tmp_path):
    out = tmp_path / "waiting"
    create_dataset(CORRIDOR_ID, out, episodes=2, policy=lambda env, seed: Wait(), policy_name="waiter", format="minari")
    dataset = read_dataset(out)
    assert dataset.info.policy == "waiter" and all(set(e.actions) == {"wait"} for e in dataset.episodes)
    assert all(e.truncations[-1] and not e.success for e in dataset.episodes)  # waiting never reaches the door
    with pytest.raises(ValueError, match="needs a policy_name"):
        create_dataset(CORRIDOR_ID, tmp_path / "x", episodes=1, policy=lambda env, seed: Wait())


def test_dataset_card_names_env_policy_episodes_seeds_columns_license_and_how_to_load(tmp_path):
    out = tmp_path / "card"
    create_dataset(BABYAI, out, episodes=2, seed=5, env_kwargs={"max_steps": 40})
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    meta = header["textenvs"]
    assert (meta["env_id"], meta["policy"], meta["episodes"], meta["seeds"]) == (BABYAI, "expert", 2, [5, 6])
    assert meta["columns"] == list(COLUMNS) and meta["env_kwargs"] == {"max_steps": 40}
    assert meta["observation_space"]["text"].startswith("Text(")
    assert header["license"] == "apache-2.0"  # BabyAI runs on minigrid
    assert header["configs"][0]["data_files"][0]["path"] == "data/*.parquet"
    assert f'data_files="DIR/{DATA_FILE}"' in text and "read_dataset(" in text
    assert f"textenvs dataset create {BABYAI} --episodes 2 --policy expert --seed 5 --format hf" in text
    assert "--env-kwarg max_steps=40" in text


def test_hf_dataset_loads_with_datasets_and_minari_with_minari(tmp_path):
    import datasets
    import minari

    create_dataset(BABYAI, tmp_path / "hf", episodes=2, seed=1)
    loaded = datasets.Dataset.from_parquet(str(tmp_path / "hf" / DATA_FILE), cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == 2 and list(loaded.features) == list(COLUMNS)
    ours = read_dataset(tmp_path / "hf").episodes
    assert loaded[1]["actions"] == ours[1].actions and loaded[1]["observations"]["text"] == ours[1].observations["text"]

    create_dataset(BABYAI, tmp_path / "minari", episodes=2, seed=1, format="minari")
    dataset = minari.MinariDataset(tmp_path / "minari" / "data")
    assert dataset.total_episodes == 2 and dataset.id == f"textenvs/{BABYAI}/expert-v0"
    assert isinstance(dataset.observation_space["text"], gym.spaces.Text)  # Text spaces stored as such
    assert list(dataset[1].actions) == ours[1].actions
    assert dataset.recover_environment().spec.id == BABYAI


def test_bad_input_is_refused_before_anything_is_written(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("mine")
    with pytest.raises(FileExistsError, match="taken"):
        create_dataset(BABYAI, taken, episodes=1)
    with pytest.raises(ValueError, match="valid policies: expert, random"):
        create_dataset(BABYAI, tmp_path / "a", episodes=1, policy="oracle")
    with pytest.raises(ValueError, match="valid formats: minari, hf"):
        create_dataset(BABYAI, tmp_path / "a", episodes=1, format="csv")
    with pytest.raises(ValueError, match="BabyAI-Text-GoToLocal-v0"):
        create_dataset("BabyAI-Text-GoToLocl-v0", tmp_path / "a", episodes=1)
    assert main(["dataset", "create", BABYAI, "--episodes", "1", "--env-kwarg", "max_steps", "--out", "x"]) == 2
    assert "is not KEY=VALUE" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # no half-written dataset anywhere


def test_an_alias_bomb_in_an_env_kwarg_or_a_card_is_refused():
    with pytest.raises(YAMLInputError, match=r"^--env-kwarg 'max_steps': refusing YAML whose aliases expand"):
        parse_env_kwarg("max_steps=" + alias_bomb("x"))
    with pytest.raises(YAMLInputError, match=r"^README.md: refusing YAML whose aliases expand"):
        read_card_info(f"---\n{alias_bomb('textenvs')}---\n", "README.md")


def test_a_missing_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "minari", None)
    with pytest.raises(ImportError, match=r'pip install "textenvs\[datasets\]"'):
        create_dataset(BABYAI, tmp_path / "m", episodes=1, format="minari")
    assert not (tmp_path / "m").exists()


def test_the_datasets_extra_does_not_pull_torch():
    closure = _dependency_closure("textenvs", ("datasets",))
    assert {"minari", "datasets"} <= closure
    assert not {"torch", "textagents", "jax"} & closure
