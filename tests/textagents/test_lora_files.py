"""LoRA adapter folders: the checks before anything is loaded, and stacking adapters into one that equals them
applied together (what LLM-Personalize serves after several rounds)."""

from __future__ import annotations

import json

import pytest
import torch

from tests.textagents.lora_support import logits, random_adapter
from textagents.llm.lora_files import ADAPTER_CONFIG, ADAPTER_WEIGHTS, AdapterError, read_adapter, stack_adapters


def test_stacked_adapters_on_the_base_model_equal_the_rounds_merged_one_after_another(tiny_models, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    first = random_adapter(tiny_models.causal, tmp_path / "round1", seed=1, rank=4, alpha=8)
    merged1 = tmp_path / "merged1"
    first.save_pretrained(merged1)  # round 2 trains on round 1's merged weights, as finetune does
    second = random_adapter(merged1, tmp_path / "round2", seed=2, rank=2, alpha=3, rslora=True)
    stacked = stack_adapters([tmp_path / "round1", tmp_path / "round2"], tmp_path / "stacked")
    assert (stacked.rank, stacked.scale) == (6, 1.0)

    base = AutoModelForCausalLM.from_pretrained(tiny_models.causal)
    served = PeftModel.from_pretrained(base, tmp_path / "stacked").eval()  # peft's own loader, as vLLM reads it
    ids = list(range(3, 40))
    expected = logits(second, ids)
    assert torch.allclose(logits(served, ids), expected, atol=1e-4)
    assert not torch.allclose(logits(first, ids), expected, atol=1e-2)  # round 2 changed the model
    only_first = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(tiny_models.causal), tmp_path / "round1"
    ).eval()
    assert not torch.allclose(logits(only_first, ids), expected, atol=1e-2)


def test_adapter_folders_are_checked_before_anything_is_loaded(tiny_models, tmp_path):
    good = tmp_path / "good"
    random_adapter(tiny_models.causal, good, seed=0)
    assert read_adapter(good).target_modules == ("c_attn",)

    def variant(name: str, change) -> str:
        folder = tmp_path / name
        folder.mkdir()
        config = json.loads((good / ADAPTER_CONFIG).read_text())
        (folder / ADAPTER_WEIGHTS).write_bytes((good / ADAPTER_WEIGHTS).read_bytes())
        change(folder, config)
        (folder / ADAPTER_CONFIG).write_text(json.dumps(config))
        with pytest.raises(AdapterError) as refused:
            read_adapter(folder)
        return str(refused.value)

    with pytest.raises(AdapterError, match="is not a folder"):
        read_adapter(good / ADAPTER_CONFIG)
    with pytest.raises(AdapterError, match=r"has no adapter_config\.json"):
        read_adapter(tmp_path)
    pickled = variant("pickled", lambda folder, config: (folder / ADAPTER_WEIGHTS).rename(folder / "adapter_model.bin"))
    assert "adapters are read from safetensors only" in pickled
    assert "peft_type must be 'LORA', got 'IA3'" in variant("ia3", lambda _, config: config.update(peft_type="IA3"))
    assert "r must be a positive integer, got 0" in variant("rank", lambda _, config: config.update(r=0))
    assert "use_dora is set" in variant("dora", lambda _, config: config.update(use_dora=True))
    targets = variant("targets", lambda _, config: config.update(target_modules="c_.*"))
    assert "target_modules must be a list of module names, got 'c_.*'" in targets
    with pytest.raises(AdapterError, match="adapts other modules"):
        other = tmp_path / "other"
        other.mkdir()
        config = json.loads((good / ADAPTER_CONFIG).read_text()) | {"target_modules": ["c_proj"]}
        (other / ADAPTER_CONFIG).write_text(json.dumps(config))
        (other / ADAPTER_WEIGHTS).write_bytes((good / ADAPTER_WEIGHTS).read_bytes())
        stack_adapters([good, other], tmp_path / "never")
    assert not (tmp_path / "never").exists()
