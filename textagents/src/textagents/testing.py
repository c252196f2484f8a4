"""Tiny random models for tests and examples, built locally: nothing is downloaded.

``build_tiny_models(directory)`` trains a byte-level BPE tokenizer on the environments' vocabulary (their
commands, captions and the papers' prompt templates, plus any texts you pass) and saves a randomly
initialized causal model (GPT-2 architecture) and seq2seq model (T5 architecture) that use it.

The model names of ``TINY_MODELS`` (``tiny-causal-lm``, ``tiny-seq2seq-lm``: the models ``build_tiny_models``
saves with its defaults) are taken wherever a model is (``model:`` in a config, ``--model``):
``tiny_model(name)`` saves that model on first use (seconds) into ``<textenvs cache>/models/tiny/<recipe
digest>/<name>`` through a temporary folder renamed into place, so a reader never sees half a model, and a
change of the recipe (vocabulary, sizes) builds a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Words and phrases of the environments and prompts (BabyAI-Text, Crafter-Text, Housekeep, fastsim).
ENV_VOCABULARY = (
    "Possible action of the agent: turn left, turn right, go forward, pick up, drop, toggle",
    "Goal of the agent: go to the red ball. Observation 0: You see a wall 2 steps forward, Action 0: ",
    "You see a blue key 1 step left and 3 steps forward, You carry a grey box, open closed locked door",
    "red green blue purple yellow grey ball box key door wall step steps left right forward",
    "Noop, Move West, Move East, Move North, Move South, Do, Sleep, Place Stone, Place Table, Place Furnace, "
    "Place Plant, Make Wood Pickaxe, Make Stone Pickaxe, Make Iron Pickaxe, Make Wood Sword, Make Stone Sword, "
    "Make Iron Sword",
    "You see:\n- grass 1 steps to your west\n- tree 4 steps to your west\nYou face grass at your front.",
    "Your status:\n- health: 9/9\n- food: 9/9\n- drink: 9/9\n- energy: 9/9\nYour inventory:\n- sapling: 1",
    "you see grass, and tree. you are targeting grass. you have in your inventory plant. you feel hungry",
    "You are a one-handed household robot. You are holding nothing.",
    "In bathroom 0, found receptacles: bathroom 0 bathtub 14, bathroom 0 carpet 15. "
    "Object tennis ball 1 found on bathroom 0 carpet 15\nIn corridor 0, no receptacles found yet.",
    "go to living room 0, look at kitchen 0 counter 18, pick up saucer 1, place saucer 1 on kitchen 0 "
    "counter 18, mission complete, bedroom 0 bottom cabinet 10, step 1: step 2: step 3:",
    "There are objects misplaced on wrong receptacles and potentially in the wrong room. Give me the next "
    "steps to explore the house and place misplaced objects on correct receptacles.",
    "The robot is in the red tile, to the north west of fan, on bathtub, near sofa bed fridge cabinet chair",
    "Goal: Possible actions: Observation: Action: system: user: assistant: 0 1 2 3 4 5 6 7 8 9 . , : ; ! ?",
)

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
SPECIAL_TOKENS = ("<pad>", "<eos>", "<unk>")
TINY_SEED, TINY_HIDDEN_SIZE, TINY_LAYERS = 0, 32, 2  # build_tiny_models' defaults, the named models' recipe


@dataclass(frozen=True)
class TinyModels:
    """Where ``build_tiny_models`` saved each model (each directory also holds the tokenizer)."""

    causal: Path
    seq2seq: Path


def train_tokenizer(texts: Iterable[str], vocab_size: int = 600):
    """A byte-level BPE tokenizer (GPT-2's scheme) trained on ``texts``, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_causal_model(vocab: int, pad: int, eos: int, hidden_size: int, layers: int):
    """A random GPT-2-architecture causal LM (seeded by the caller)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=vocab,
        n_positions=4096,
        n_embd=hidden_size,
        n_layer=layers,
        n_head=2,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=pad,
    )
    return GPT2LMHeadModel(config)


def tiny_seq2seq_model(vocab: int, pad: int, eos: int, hidden_size: int, layers: int):
    """A random T5-architecture seq2seq LM (seeded by the caller)."""
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=vocab,
        d_model=hidden_size,
        d_kv=hidden_size // 2,
        d_ff=2 * hidden_size,
        num_layers=layers,
        num_heads=2,
        pad_token_id=pad,
        eos_token_id=eos,
        decoder_start_token_id=pad,
    )
    return T5ForConditionalGeneration(config)


#: What each kind of tiny model is built with.
TINY_ARCHITECTURES = {"causal": tiny_causal_model, "seq2seq": tiny_seq2seq_model}


def random_models(tokenizer, seed: int, hidden_size: int, layers: int) -> dict[str, Any]:
    """A random model of each kind of ``TINY_ARCHITECTURES``, built in that order from one seeded RNG stream."""
    import torch

    vocab, pad, eos = len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return {kind: build(vocab, pad, eos, hidden_size, layers).eval() for kind, build in TINY_ARCHITECTURES.items()}


def save_model(model: Any, tokenizer, path: Path) -> None:
    """``model`` and ``tokenizer`` in ``path``, readable by everyone (safetensors writes 0600)."""
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    for file in path.iterdir():
        file.chmod(0o644)


def build_tiny_models(
    directory: str | Path,
    texts: Iterable[str] = (),
    seed: int = TINY_SEED,
    hidden_size: int = TINY_HIDDEN_SIZE,
    layers: int = TINY_LAYERS,
) -> TinyModels:
    """Save a tiny random causal model and seq2seq model with a locally trained tokenizer under ``directory``."""
    directory = Path(directory)
    tokenizer = train_tokenizer([*ENV_VOCABULARY, *texts])
    models = random_models(tokenizer, seed, hidden_size, layers)
    paths = TinyModels(directory / "causal", directory / "seq2seq")
    save_model(models["causal"], tokenizer, paths.causal)
    save_model(models["seq2seq"], tokenizer, paths.seq2seq)
    return paths


#: Model names that resolve to a tiny random model built here on first use: name -> kind.
TINY_MODELS = {"tiny-causal-lm": "causal", "tiny-seq2seq-lm": "seq2seq"}


def tiny_model_dir(name: str) -> Path:
    """Where ``tiny_model(name)`` keeps the model: a new folder whenever the recipe changes."""
    from textenvs.data.settings import cache_dir

    recipe = [ENV_VOCABULARY, CHAT_TEMPLATE, SPECIAL_TOKENS, TINY_SEED, TINY_HIDDEN_SIZE, TINY_LAYERS]
    digest = hashlib.sha256(json.dumps(recipe).encode()).hexdigest()[:12]
    return cache_dir() / "models" / "tiny" / digest / name


def tiny_model(name: str) -> Path:
    """The folder of the tiny model ``name`` (``TINY_MODELS``), built on first use (module docstring)."""
    target = tiny_model_dir(name)
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{name}."))
    try:
        tokenizer = train_tokenizer(ENV_VOCABULARY)
        models = random_models(tokenizer, TINY_SEED, TINY_HIDDEN_SIZE, TINY_LAYERS)
        save_model(models[TINY_MODELS[name]], tokenizer, staged)
        staged.chmod(0o755)  # temporary folders are private; the cache is readable like any download
        try:
            os.replace(staged, target)
        except OSError:
            if not (target / "config.json").is_file():
                raise  # not the same model built by another process at the same time
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return target
