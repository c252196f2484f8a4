"""A transformers causal LM (LoRA merged) written as a GGUF file that llama.cpp loads (``gguf`` package).

Architectures: ``llama`` (SmolLM2) and ``qwen2`` (Qwen2.5-Coder); any other is refused in one line.
Tensors take llama.cpp's names (``gguf.get_tensor_name_map``); the ``llama`` architecture's Q and K rows are
permuted as llama.cpp's ``convert_hf_to_gguf.py`` does (transformers' GGUF loader undoes it on load). Types:
``f16`` (matrices in float16, norms and biases in float32, as llama.cpp's converter writes them), ``q8_0``
(matrices in llama.cpp's blocks of 32 8-bit values with a float16 scale, ``gguf.quants``, as its converter's
``--outtype q8_0``; a matrix whose rows are not whole blocks stays float16) or ``f32``.
The output matrix is left out when it is the embedding matrix (tied), as llama.cpp expects.

Metadata: every key of a ``reference`` GGUF of the same base model (tokenizer, chat template, names, the
original converter's hyper-parameters), so the tokenizer is exactly the one llama.cpp already loads for it;
the hyper-parameters read from the model's config must equal the reference's, or the export is refused (a
reference of another model). Without a reference the tokenizer is written from the transformers tokenizer,
which is only done for the GPT-2 byte-level BPE scheme (the tiny test models'); any other needs a reference.

The file is written through a temporary file renamed into place: a reader sees the old file or the new one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textagents.llm.models import MODELS, gguf_path, known_name

OUTTYPES = ("f16", "q8_0", "f32")
#: The ``general.file_type`` each output type writes.
FILE_TYPES = {"f16": "MOSTLY_F16", "q8_0": "MOSTLY_Q8_0", "f32": "ALL_F32"}


@dataclass(frozen=True)
class Architecture:
    """A transformers ``model_type`` as llama.cpp knows it: its GGUF name and whether Q/K rows are permuted."""

    gguf_name: str
    permute_qk: bool


ARCHITECTURES = {"llama": Architecture("llama", True), "qwen2": Architecture("qwen2", False)}


def check_exportable(config: Any) -> Architecture:
    """The architecture of a transformers config, or a ``ValueError`` naming the ones that export."""
    model_type = getattr(config, "model_type", None)
    if model_type not in ARCHITECTURES:
        raise ValueError(f"cannot export model type {model_type!r} to GGUF; supported: {', '.join(ARCHITECTURES)}")
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"cannot export rope_type {rope['rope_type']!r} to GGUF; supported: default")
    return ARCHITECTURES[model_type]


def reference_gguf(model: str | os.PathLike[str]) -> Path | None:
    """The GGUF of the base model ``model`` names: a downloaded model's cached GGUF, or the one ``.gguf`` file
    in a model folder; None when there is none (or several)."""
    name = known_name(model)
    if name is not None:
        path = gguf_path(name)
        return path if path.is_file() else None
    folder = Path(model).expanduser()
    found = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
    return found[0] if len(found) == 1 else None


def write_gguf(
    model: Any,
    tokenizer: Any,
    out: str | os.PathLike[str],
    *,
    reference: str | os.PathLike[str] | None = None,
    outtype: str = "f16",
) -> Path:
    """Write ``model`` (a transformers causal LM, LoRA merged) as the GGUF ``out``; see the module docstring.
    ``tokenizer`` is the model's (used when there is no ``reference``)."""
    import gguf

    if outtype not in OUTTYPES:
        raise ValueError(f"outtype must be one of {list(OUTTYPES)}, got {outtype!r}")
    config = model.config
    architecture = check_exportable(config)
    tensors = _gguf_tensors(model, architecture, outtype)
    hyper = _hyperparameters(config, architecture)
    if reference is not None:
        metadata = _reference_metadata(Path(reference), architecture, hyper)
    else:
        metadata = {**hyper, **_tokenizer_metadata(tokenizer, config.vocab_size)}
    vocab = len(metadata["tokenizer.ggml.tokens"][0])
    if vocab != config.vocab_size:
        raise ValueError(f"the tokenizer has {vocab} tokens but the model's embedding {config.vocab_size} rows")
    file_type = getattr(gguf.LlamaFileType, FILE_TYPES[outtype])
    metadata["general.file_type"] = (int(file_type), gguf.GGUFValueType.UINT32)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    try:
        writer = gguf.GGUFWriter(temporary, architecture.gguf_name)
        for key, (value, vtype, *sub_type) in metadata.items():
            writer.add_key_value(key, value, vtype, *sub_type)
        for name, array in tensors.items():
            blocks = gguf.GGMLQuantizationType.Q8_0 if array.dtype == np.uint8 else None  # Q8_0 blocks, as bytes
            writer.add_tensor(name, array, raw_dtype=blocks)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the model from the rest of a team
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return out


def permute_qk(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's row order of a ``llama`` Q or K projection (weight or bias) with ``n_head`` heads:
    each head's two rotary halves interleaved (``convert_hf_to_gguf.py``, ``LlamaModel.permute``)."""
    rows = weights.shape[0]
    return weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:]).swapaxes(1, 2).reshape(weights.shape)


def _gguf_tensors(model: Any, architecture: Architecture, outtype: str) -> dict[str, np.ndarray]:
    """The model's tensors by their GGUF names, permuted and typed for llama.cpp."""
    import gguf
    import torch

    config = model.config
    arch = next(key for key, name in gguf.MODEL_ARCH_NAMES.items() if name == architecture.gguf_name)
    names = gguf.get_tensor_name_map(arch, config.num_hidden_layers)
    tied = model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    tensors: dict[str, np.ndarray] = {}
    for hf_name, tensor in model.state_dict().items():
        stem, _, suffix = hf_name.rpartition(".")
        if tied and stem == "lm_head":
            continue
        name = names.get_name(stem)
        if name is None or suffix not in ("weight", "bias"):
            raise ValueError(f"tensor {hf_name!r} has no GGUF name (merge LoRA adapters with merge_and_unload first)")
        array = tensor.detach().to(device="cpu", dtype=torch.float32).numpy()
        kind = name.rsplit(".", 1)[-1]
        if architecture.permute_qk and kind in heads:
            array = permute_qk(array, heads[kind])
        tensors[f"{name}.{suffix}"] = np.ascontiguousarray(_typed(array, outtype))
    return tensors


def _typed(array: np.ndarray, outtype: str) -> np.ndarray:
    """``array`` as ``outtype`` writes it: norms and biases stay float32, as llama.cpp writes them; Q8_0 blocks
    as bytes."""
    import gguf

    if outtype == "f32" or array.ndim == 1:
        return array
    block = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0][0]
    if outtype == "q8_0" and array.shape[-1] % block == 0:
        return gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0)
    return array.astype(np.float16)


def _hyperparameters(config: Any, architecture: Architecture) -> dict[str, tuple[Any, ...]]:
    """The keys llama.cpp's converter writes for the architecture, from a transformers config."""
    from gguf import GGUFValueType as T

    arch = architecture.gguf_name
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    rope = getattr(config, "rope_parameters", None) or {}
    keys: dict[str, tuple[Any, ...]] = {
        f"{arch}.context_length": (config.max_position_embeddings, T.UINT32),
        f"{arch}.embedding_length": (config.hidden_size, T.UINT32),
        f"{arch}.block_count": (config.num_hidden_layers, T.UINT32),
        f"{arch}.feed_forward_length": (config.intermediate_size, T.UINT32),
        f"{arch}.attention.head_count": (heads, T.UINT32),
        f"{arch}.attention.head_count_kv": (config.num_key_value_heads, T.UINT32),
        f"{arch}.rope.freq_base": (float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))), T.FLOAT32),
        f"{arch}.attention.layer_norm_rms_epsilon": (float(config.rms_norm_eps), T.FLOAT32),
    }
    if head_dim != config.hidden_size // heads:
        keys[f"{arch}.attention.key_length"] = (head_dim, T.UINT32)
        keys[f"{arch}.attention.value_length"] = (head_dim, T.UINT32)
    if arch == "llama":
        keys["llama.vocab_size"] = (config.vocab_size, T.UINT32)
        keys["llama.rope.dimension_count"] = (head_dim, T.UINT32)
    return keys


def _reference_metadata(
    reference: Path, architecture: Architecture, hyper: dict[str, tuple[Any, ...]]
) -> dict[str, tuple[Any, ...]]:
    """Every key of the reference GGUF (but the file's own and the tensor type), and the model's
    hyper-parameters, which must equal the reference's."""
    from gguf import GGUFReader, GGUFValueType

    if not reference.is_file():
        raise FileNotFoundError(f"no reference GGUF at {reference}")
    reader = GGUFReader(reference)
    found = reader.fields["general.architecture"].contents()
    if found != architecture.gguf_name:
        raise ValueError(f"the reference GGUF {reference} is a {found!r} model, the model a {architecture.gguf_name!r}")
    metadata: dict[str, tuple[Any, ...]] = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "general.file_type"):
            continue
        vtype = field.types[0]
        sub = (field.types[-1],) if vtype == GGUFValueType.ARRAY else ()
        metadata[key] = (field.contents(), vtype, *sub)
    for key, (value, vtype) in hyper.items():
        if key in metadata and not math.isclose(float(metadata[key][0]), float(value), rel_tol=1e-6):
            raise ValueError(
                f"the reference GGUF {reference} has {key} = {metadata[key][0]}, the model {value}: "
                "not the same base model"
            )
        metadata.setdefault(key, (value, vtype))
    return metadata


def _tokenizer_metadata(tokenizer: Any, vocab_size: int) -> dict[str, tuple[Any, ...]]:
    """A GPT-2 byte-level BPE tokenizer's keys (tokens, types, merges, special ids, chat template), padded with
    unused tokens up to the model's ``vocab_size`` as llama.cpp's converter does."""
    from gguf import GGUFValueType as T
    from gguf import TokenType

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    pre = spec.get("pre_tokenizer") or {}
    if spec["model"]["type"] != "BPE" or pre.get("type") != "ByteLevel" or not pre.get("use_regex", True):
        known = ", ".join(f"{name} ({model.gguf_name})" for name, model in MODELS.items())
        raise ValueError(
            "only a GPT-2 byte-level BPE tokenizer is written without a reference GGUF; give the base model's "
            f"GGUF as the reference (downloaded models keep theirs: {known})"
        )
    by_id = {index: token for token, index in tokenizer.get_vocab().items()}
    added = {item["id"]: item for item in spec.get("added_tokens", [])}
    tokens, types = [], []
    for index in range(vocab_size):
        if index not in by_id:
            tokens.append(f"[PAD{index}]")
            types.append(TokenType.UNUSED)
            continue
        tokens.append(by_id[index])
        if index not in added:
            types.append(TokenType.NORMAL)
        else:
            types.append(TokenType.CONTROL if added[index].get("special") else TokenType.USER_DEFINED)
    merges = spec["model"]["merges"]
    merges = [" ".join(pair) if isinstance(pair, list) else pair for pair in merges]
    adds_bos = tokenizer("a")["input_ids"] != tokenizer("a", add_special_tokens=False)["input_ids"]
    metadata: dict[str, tuple[Any, ...]] = {
        "tokenizer.ggml.model": ("gpt2", T.STRING),
        "tokenizer.ggml.pre": ("gpt-2", T.STRING),
        "tokenizer.ggml.tokens": (tokens, T.ARRAY, T.STRING),
        "tokenizer.ggml.token_type": ([int(t) for t in types], T.ARRAY, T.INT32),
        "tokenizer.ggml.merges": (merges, T.ARRAY, T.STRING),
        "tokenizer.ggml.add_bos_token": (adds_bos, T.BOOL),
    }
    for role in ("bos", "eos", "unk", "pad"):
        index = getattr(tokenizer, f"{role}_token_id", None)
        if index is not None:
            metadata[f"tokenizer.ggml.{'padding' if role == 'pad' else role}_token_id"] = (index, T.UINT32)
    if getattr(tokenizer, "chat_template", None):
        metadata["tokenizer.chat_template"] = (tokenizer.chat_template, T.STRING)
    return metadata
