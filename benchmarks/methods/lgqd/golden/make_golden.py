"""Golden numbers for LGQD's issue #32 decisions, from the original (salehiac/LanguageGroundedQD @ 2e7ba89,
GPL-3.0): its own model code run, or a few lines transcribed here (cited). Not imported by the package.

    git --git-dir=<mirror> show 2e7ba89:src/nanoGPT_QDRL/model.py > /tmp/lgqd_model.py
    python benchmarks/methods/lgqd/golden/make_golden.py /tmp/lgqd_model.py

writes tests/textagents/methods/golden/lgqd_rounding.json and lgqd_bias.json.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

GOLDEN = Path(__file__).resolve().parents[4] / "tests/textagents/methods/golden"
BDS = [[0.0, 0.0], [600.0, 600.0], [14.9, 15.0], [15.1, 44.9], [45.0, 299.96], [123.456, 587.2], [301.7, 88.04]]
ACTIONS = [[0.04, -0.05], [0.15, -0.149], [3.999, -4.0], [5.27, -7.351], [0.25, 1.05], [-0.349, 2.6501]]


def normalize_th(x: torch.Tensor, low: float, high: float, scale: float) -> torch.Tensor:
    """MiscUtils.py:76-95 (without the inverse): maps [low, high] to [-scale, scale]."""
    a = 2 / (high - low)
    b = -(high + low) / (high - low)
    return (a * x + b) * scale


def rounding() -> dict:
    # the descriptor: NavigationEnv.py:78-91 (normalize_th over [0, 600], as config.yaml's
    # input_normalization: bds True), then model.py:326 (training) and model.py:813 (deployment):
    # .round(decimals=1), on float32 tensors
    bd = torch.tensor(BDS, dtype=torch.float32)
    rounded = normalize_th(bd, low=0, high=600, scale=1.0).round(decimals=1)
    # the actions: NavigationEnv.py:138-139, `action.round(1)` on the policy's numpy output (float32: the
    # output of SmallFC_FW.forward, Agents.py:153-162), recorded in tau
    actions = np.asarray(ACTIONS, np.float32).round(1)
    return {
        "source": "salehiac/LanguageGroundedQD@2e7ba89 MiscUtils.py:76-95, NavigationEnv.py:78-91,138-139, "
        "nanoGPT_QDRL/model.py:326,813",
        "bd": BDS,
        "bd_normalised_rounded": rounded.tolist(),
        "actions": ACTIONS,
        "actions_rounded": actions.tolist(),
    }


def load_model_module(path: str) -> types.ModuleType:
    sys.modules.setdefault("termcolor", types.SimpleNamespace(colored=lambda text, *a, **k: text))
    spec = importlib.util.spec_from_file_location("lgqd_original_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bias(model_path: str) -> dict:
    """The original's GPT_QDRL built with config.yaml's model_cfg (n_layer 2, n_head 4, n_embd 360, bias 0,
    block_size 1435, dropout 0.1) and 4 clusters a wheel: which parameters are biases."""
    original = load_model_module(model_path)
    kmeans = [SimpleNamespace(cluster_centers_=np.zeros((4, 1))) for _ in range(2)]
    config = original.GPT_QDRLConfig(
        block_size=1435, vocab_size=100, n_layer=2, n_head=4, n_embd=360, dropout=0.1, bias=False,
        n_action_dims=2, n_obs_dims=5, n_bd_dims=2, kmeans_obj_lst=kmeans,
    )  # fmt: skip
    model = original.GPT_QDRL(config)
    named = dict(model.named_parameters())
    blocks = {n: list(p.shape) for n, p in named.items() if n.startswith("transformer.h.")}
    return {
        "source": "salehiac/LanguageGroundedQD@2e7ba89 nanoGPT_QDRL/model.py:19-28,31-40,105-123,132-150,167-178,"
        "335-403; src/config/config.yaml model_cfg",
        "block_parameters": blocks,
        "block_parameter_count": sum(int(np.prod(s)) for s in blocks.values()),
        "final_norm": {n: list(p.shape) for n, p in named.items() if n.startswith("transformer.ln_f")},
        "embedding_biases": sorted(
            n for n in named if n.endswith("bias") and n.split(".")[1] in ("bd_embedding", "obs_embedding")
        ),
        "cluster_head_biases": sorted(n for n in named if n.endswith("bias") and n.startswith("action_cluster_heads")),
    }


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    (GOLDEN / "lgqd_rounding.json").write_text(json.dumps(rounding(), indent=1) + "\n")
    (GOLDEN / "lgqd_bias.json").write_text(json.dumps(bias(sys.argv[1]), indent=1) + "\n")


if __name__ == "__main__":
    main()
