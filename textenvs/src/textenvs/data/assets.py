"""The table of downloadable data files: where each comes from (pinned commit), its size and sha256.

Every row was checked byte for byte against the upstream repository at the pinned commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Source:
    """A public GitHub repository at one commit (full 40-hex hash)."""

    repo: str
    commit: str


@dataclass(frozen=True)
class Asset:
    """One data file: ``name`` is its path relative to a data dir (e.g. ``"housekeep/amt/data.npy"``)."""

    name: str
    source: Source
    upstream_path: str
    size: int
    sha256: str
    license: str

    @property
    def group(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.source.repo}/{self.source.commit}/{self.upstream_path}"


HOUSEKEEP = Source("yashkant/housekeep", "ff57c791412ef11f1b66cafb242426afaf74f0a3")
LIBFASTSIM = Source("sferes2/libfastsim", "bc1cc8ab7a9297d7631424214fcacda8525fcb8a")
FASTSIM_GYM = Source("mirandablue/fastsim_gym", "956d9883bdaa7785325c81c29ce376365bb11035")
LANGUAGE_GROUNDED_QD = Source("salehiac/LanguageGroundedQD", "2e7ba89cb2b3936a744242f933fee28b1794236f")
LLM_PERSONALIZE = Source("donggehan/codellmpersonalize", "47844d2e56e134f3f140f274ff998833d202cdc5")

_SCENES = "data/scene_datasets/igibson/assets"
_EPISODES = "data/datasets/cos_eor_v11_pruned"
_AMT = "cos_eor/scripts/orm/amt_data"
_GPL3 = "GPL-3.0-only"

_ROWS = (
    Asset(
        "housekeep/LICENSE",
        HOUSEKEEP,
        "license.txt",
        1080,
        "5f50a345a79a82bdfeaec3aac8025735f441793393aa8d20ec4dade9729aee78",
        "MIT",
    ),
    Asset(
        "housekeep/amt/data.npy",
        HOUSEKEEP,
        f"{_AMT}/data.npy",
        2788628,
        "40d083e88eaf4d2eee644c35525c48c44668626f409dd7e76bf99f64aba8f2ca",
        "MIT",
    ),
    Asset(
        "housekeep/amt/objects.txt",
        HOUSEKEEP,
        f"{_AMT}/objects.txt",
        3200,
        "281f16acada462a3cd14337c6747909fe8e2806c32ca4847e853e72bdb877d2f",
        "MIT",
    ),
    Asset(
        "housekeep/amt/room_recep.txt",
        HOUSEKEEP,
        f"{_AMT}/room_recep.txt",
        2404,
        "0d02c90240a11b949d86ace4a3232d91d8e7fb9737f2c747c9df7fc69ce4bbe4",
        "MIT",
    ),
    Asset(
        "housekeep/amt/splits.yaml",
        HOUSEKEEP,
        f"{_AMT}/splits.yaml",
        5140,
        "f165ec11c3ab30000c132ddbe57263f70184d7923d1e6396fcabbdd74e7c7872",
        "MIT",
    ),
    Asset(
        "housekeep/amt/readme.txt",
        HOUSEKEEP,
        f"{_AMT}/readme.txt",
        280,
        "5a9f149ebe1673e4fafcee27b6291285fb73503d55c2ec4a6a792e6e3fca36cf",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Beechwood_0_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Beechwood_0_int/metadata_v2_readjusted.yaml",
        52283,
        "5fe47ea868a2ca2052f1c523ac3bd8310141718d05e886720f5f80772ce666bd",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Beechwood_1_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Beechwood_1_int/metadata_v2_readjusted.yaml",
        42709,
        "310ef1e98526d60ea1c5d2b9eb203a5b8444dbda250f8007d092eb83ec4064f4",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Benevolence_1_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Benevolence_1_int/metadata_v2_readjusted.yaml",
        26779,
        "2d2038bcc73d8837a6dd805ec9b632feb458aa84eb1d84e6d0ec4cf3a924ff50",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Benevolence_2_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Benevolence_2_int/metadata_v2_readjusted.yaml",
        17419,
        "b34db608e481dc2e063c37283e2271e17e458cb2c371a717753edf0c9c04be5b",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Ihlen_0_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Ihlen_0_int/metadata_v2_readjusted.yaml",
        20731,
        "c120275b442acd47058e1c9844ccad3589a2bfcad97dcabf3cd1d7e503979c3e",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Ihlen_1_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Ihlen_1_int/metadata_v2_readjusted.yaml",
        48140,
        "2d26ba294bf6945456e804395bc52de183054bc47c0d911b72876885970679fd",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Merom_0_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Merom_0_int/metadata_v2_readjusted.yaml",
        31061,
        "1ee3c617f4b248cfa5eea2f6ddd9935be3e1884aa269f5dae7560ff893e6d02c",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Merom_1_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Merom_1_int/metadata_v2_readjusted.yaml",
        41415,
        "515bbd0508c8e6487267098c9cebdfb89206e719759d33c79f9cf7701c4dc560",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Pomaria_0_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Pomaria_0_int/metadata_v2_readjusted.yaml",
        22660,
        "1b81c9f59e0dd71cb9d0170314fafa15f5b977d3a2dd35023660d92ecb4b183d",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Pomaria_1_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Pomaria_1_int/metadata_v2_readjusted.yaml",
        36103,
        "15fe8092ac495a3a49ed9d1382f6f0fb2ea0b78846c57a8b1bf87a6479a772b2",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Pomaria_2_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Pomaria_2_int/metadata_v2_readjusted.yaml",
        14268,
        "282088ace2d3a98f07c6c256e6a552d06a89bdddbe5879138ce5a2f209bc7156",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Rs_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Rs_int/metadata_v2_readjusted.yaml",
        28713,
        "6ae495f6ca54c62aac15e56f78b10a1a429c0fbbd12b938678af1674cce484b7",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Wainscott_0_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Wainscott_0_int/metadata_v2_readjusted.yaml",
        65941,
        "53dc5beb09313bbe356c21e3b9957feaadb550dcb7326a6467a0b74fe128a1cc",
        "MIT",
    ),
    Asset(
        "housekeep/scenes/Wainscott_1_int.yaml",
        HOUSEKEEP,
        f"{_SCENES}/Wainscott_1_int/metadata_v2_readjusted.yaml",
        43244,
        "741bf2bed2bf2ea33244b109aee94d6ebbfc89de542b4b291b6c10a5c04371e1",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/test/Beechwood_1_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/test/Beechwood_1_int.json.gz",
        3740428,
        "93fd4526a3af2c25349c5ed6a79435d67e3c0927c20a444f94bb338dcdebd458",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/test/Benevolence_1_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/test/Benevolence_1_int.json.gz",
        1857828,
        "dd5e0a2487b56b5b1107989cc94b71eb09c5aa1548f2d27075724d641dcdc5f3",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/test/Ihlen_0_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/test/Ihlen_0_int.json.gz",
        722372,
        "87679e804abf0ca7d948f617236951d99ee7a0e69b4255f554aad1d7ddbe36b5",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/test/Merom_0_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/test/Merom_0_int.json.gz",
        3127460,
        "9a03c441bbbe0c84c86af41b76f1cf9c2799bbacf61ab974658d4efd572932ae",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/train/Benevolence_2_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/train/Benevolence_2_int.json.gz",
        1618431,
        "f50a455069314ef5a6757cc29a505ae1423d99c0ce98cd50826d2fb82a100e83",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/train/Pomaria_0_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/train/Pomaria_0_int.json.gz",
        1995606,
        "e58525e8989d7a2c0cfdcec4f670dd9c52c43d6ef4382cc32ec86f419064d4cf",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/train/Pomaria_2_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/train/Pomaria_2_int.json.gz",
        1543632,
        "76e9a1564a13a74357ee06db5a9a161e5f0928ff03f08d655fd0f4413512ee74",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/val/Ihlen_1_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/val/Ihlen_1_int.json.gz",
        2034038,
        "419bc8e56cafd752f5ec142c6e9c7b136cdf341c8a3ef9bc5cc6c2f438cddb56",
        "MIT",
    ),
    Asset(
        "housekeep/episodes/val/Merom_1_int.json.gz",
        HOUSEKEEP,
        f"{_EPISODES}/val/Merom_1_int.json.gz",
        1887760,
        "abb55094c0d5c20f2e6833344c246aafbf1b2f5075476efe7a733b26b45b664c",
        "MIT",
    ),
    Asset(
        "fastsim/LICENSE.libfastsim",
        LIBFASTSIM,
        "LICENSE",
        35122,
        "12ac5047f2af0522f06798b1589ffc4599bc29c91f954d7874e0320634e777c0",
        _GPL3,
    ),
    Asset(
        "fastsim/maps/maze_hard.pbm",
        FASTSIM_GYM,
        "gym_fastsim/assets/maze_hard.pbm",
        5050,
        "8e4e9ed570c77c304b6495a8d3d42503a9ffbca2babaf5008f2681e2e1f9de9e",
        _GPL3,
    ),
    Asset(
        "fastsim/maps/maze_19_2.pbm",
        LANGUAGE_GROUNDED_QD,
        "src/environment/ressources/maze_19_2.pbm",
        5057,
        "e0ec0fb3b8e87e6576ad6f51c1ad94e116201cf9d72723526c989844ebd38d51",
        _GPL3,
    ),
    Asset(
        "llm_personalize/LICENSE",
        LLM_PERSONALIZE,
        "license.txt",
        1080,
        "5f50a345a79a82bdfeaec3aac8025735f441793393aa8d20ec4dade9729aee78",
        "MIT",
    ),
    Asset(
        "llm_personalize/igib_v2_nav_sp.yaml",
        LLM_PERSONALIZE,
        "cos_eor/configs/local/igib_v2_nav_sp.yaml",
        20015,
        "54ab2ef3157091c4bb18669f0291e7e326932ba422955f56b9eef82f550f95ba",
        "MIT",
    ),
    Asset(
        "llm_personalize/il_pairs_pomaria_2_train.jsonl",
        LLM_PERSONALIZE,
        "experiments/bt_8_p2_train_pair/train.jsonl",
        98979,
        "1e968ebd1382075dda89f1970edce85cc93e4c18e20163ff4bbaae317489c685",
        "MIT",
    ),
    Asset(
        "llm_personalize/st_iter1_pairs_pomaria_2_train.jsonl",
        LLM_PERSONALIZE,
        "experiments/ft_22_iter_1_from_bt_8_pair_personal/train.jsonl",
        181119,
        "4b7788974652d1ed55d468abeeffe7ebd68fe59986bbb55e09ad597fa44ed9b2",
        "MIT",
    ),
)

ASSETS: Mapping[str, Asset] = MappingProxyType({asset.name: asset for asset in _ROWS})

_FAMILY_GROUPS = ("housekeep", "fastsim", "llm_personalize")
GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        **{group: tuple(a.name for a in _ROWS if a.group == group) for group in _FAMILY_GROUPS},
        "all": tuple(a.name for a in _ROWS),
    }
)


def group_names(group: str) -> tuple[str, ...]:
    """The asset names of ``group``; an unknown group is a ``ValueError`` listing the valid ones."""
    if group not in GROUPS:
        raise ValueError(f"unknown data group {group!r}; valid groups: {', '.join(GROUPS)}")
    return GROUPS[group]
