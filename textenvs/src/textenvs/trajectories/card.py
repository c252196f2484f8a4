"""The dataset card (``README.md``): a YAML header the Hugging Face Hub reads, then how to load the data."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import yaml

from textenvs.data import parse_yaml
from textenvs.trajectories.hf_format import COLUMNS, DATA_FILE, is_image_space
from textenvs.trajectories.info import DatasetInfo
from textenvs.trajectories.minari_format import DATA_DIR
from textenvs.trajectories.record import RECORDED_INFO_KEYS

CARD_FILE = "README.md"
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))

#: Field -> what it holds in a Minari ``EpisodeData``, for the card.
MINARI_FIELDS = {
    "id": "the episode's index; its metadata holds `seed` and `episode_metrics`",
    "observations": "per observation key, the T + 1 observations (the reset one, then one per step)",
    "actions": "the T actions (command strings; numbers for continuous-control envs)",
    "rewards": "the T rewards",
    "terminations": "the T `terminated` flags",
    "truncations": "the T `truncated` flags",
    "infos": "the T + 1 values of "
    + ", ".join(RECORDED_INFO_KEYS)
    + " (`admissible_commands` as a JSON list per step: Minari infos keep one shape per step)",
}


def space_text(space: gym.Space) -> str:
    if isinstance(space, gym.spaces.Text):
        return f"Text(max_length={space.max_length})"
    if isinstance(space, gym.spaces.Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, gym.spaces.Box):
        kind = "RGB image " if is_image_space(space) else ""
        return f"{kind}Box{tuple(space.shape)} {space.dtype}"
    return str(space)


def size_category(episodes: int) -> str:
    return next((name for bound, name in _SIZES if episodes < bound), "n>1M")


def command_line(info: DatasetInfo) -> str:
    kwargs = "".join(f" --env-kwarg {k}={json.dumps(v)}" for k, v in sorted(info.env_kwargs.items()))
    return (
        f"textenvs dataset create {info.env_id} --episodes {info.episodes} --policy {info.policy} "
        f"--seed {info.seeds[0]} --format {info.format}{kwargs} --out DIR"
    )


def _header(info: DatasetInfo, env: gym.Env) -> dict[str, Any]:
    columns = list(COLUMNS) if info.format == "hf" else list(MINARI_FIELDS)
    header: dict[str, Any] = {
        "license": info.license,
        "pretty_name": f"{info.env_id} {info.policy} trajectories",
        "task_categories": ["reinforcement-learning"],
        "tags": ["textenvs", "gymnasium", "text", "trajectories", info.policy, info.format],
        "size_categories": [size_category(info.episodes)],
    }
    if info.format == "hf":
        header["configs"] = [{"config_name": "default", "data_files": [{"split": "train", "path": "data/*.parquet"}]}]
    header["textenvs"] = {
        **info.as_dict(),
        "columns": columns,
        "observation_space": {k: space_text(s) for k, s in env.observation_space.spaces.items()},
        "action_space": space_text(env.action_space),
    }
    return header


def _how_to_load(info: DatasetInfo) -> str:
    ours = (
        "```python\n"
        "from textenvs.trajectories import read_dataset\n\n"
        'dataset = read_dataset("DIR")  # or read_dataset("DIR", limit=5): the first 5 episodes\n'
        "print(dataset.info.env_id, len(dataset.episodes), dataset.episodes[0].actions)\n"
        "```\n"
    )
    if info.format == "hf":
        theirs = (
            "```python\n"
            "from datasets import load_dataset\n\n"
            f'dataset = load_dataset("parquet", data_files="DIR/{DATA_FILE}", split="train")\n'
            'episode = dataset[0]  # one row per episode: episode["observations"]["text"], episode["actions"], ...\n'
            "```\n"
        )
    else:
        theirs = (
            "```python\n"
            "import minari\n\n"
            f'dataset = minari.MinariDataset("DIR/{DATA_DIR}")\n'
            "episode = dataset[0]  # EpisodeData: observations, actions, rewards, terminations, truncations, infos\n"
            "env = dataset.recover_environment()  # needs textenvs installed\n"
            "```\n\n"
            f"Or put the folder at `$MINARI_DATASETS_PATH/{info.minari_id}` and call "
            f'`minari.load_dataset("{info.minari_id}")`.\n'
        )
    return f"{theirs}\nWith textenvs (either format):\n\n{ours}"


def _fields_table(info: DatasetInfo) -> str:
    rows = COLUMNS.items() if info.format == "hf" else MINARI_FIELDS.items()
    name = "column" if info.format == "hf" else "EpisodeData field"
    return "\n".join([f"| {name} | what |", "|---|---|", *(f"| `{k}` | {v} |" for k, v in rows)])


def summary(info: DatasetInfo) -> str:
    """What the dataset holds, in one sentence (the card's first paragraph, Minari's ``description``)."""
    what = "Hugging Face `datasets` parquet" if info.format == "hf" else "a Minari dataset (Arrow storage)"
    first, last = info.seeds[0], info.seeds[-1]
    return (
        f"{info.episodes} episodes ({info.steps} steps) of the `{info.policy}` policy on the textenvs environment "
        f"`{info.env_id}`, as {what}. Episode i was reset with seed {first} + i (seeds {first} to {last})."
    )


def dataset_card(info: DatasetInfo, env: gym.Env) -> str:
    """The ``README.md`` of a dataset: YAML header (license, Hub metadata and a ``textenvs`` entry with env id,
    policy, episodes, seeds, columns and spaces), then what it holds and how to load it."""
    header = yaml.safe_dump(_header(info, env), sort_keys=False, allow_unicode=True)
    observation_rows = "\n".join(f"| `{k}` | {space_text(s)} |" for k, s in env.observation_space.spaces.items())
    return (
        f"---\n{header}---\n\n"
        f"# {info.env_id}: {info.policy} trajectories\n\n"
        f"{summary(info)}\nMade by textenvs {info.textenvs_version} with\n\n"
        f"```bash\n{command_line(info)}\n```\n\n"
        "The same command writes the same files, byte for byte.\n\n"
        f"## How to load it\n\n{_how_to_load(info)}\n"
        f"## Fields\n\n{_fields_table(info)}\n\n"
        "Observation keys (the env's observation space):\n\n"
        f"| key | space |\n|---|---|\n{observation_rows}\n\n"
        f"Actions: {space_text(env.action_space)}.\n\n"
        "## License\n\n"
        f"{info.license}: the license of the simulator or data this environment's family is built on "
        "(textenvs' `docs/data.md`); textenvs' code is MIT.\n"
    )


def read_card_info(text: str, where: str) -> dict[str, Any]:
    """The ``textenvs`` entry of a card's YAML header."""
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise ValueError(f"{where}: no YAML header between '---' lines")
    header = parse_yaml(text[4 : text.index("\n---\n", 4)], where)
    if not isinstance(header, dict) or not isinstance(header.get("textenvs"), dict):
        raise ValueError(f"{where}: the YAML header has no 'textenvs' entry: not a textenvs dataset card")
    return header["textenvs"]
