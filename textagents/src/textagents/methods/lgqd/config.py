"""Language-grounded QD's settings (Salehi & Doncieux 2023; METHODS.md): one config for the whole pipeline,
read by every stage from the pipeline folder's ``config.json``."""

from __future__ import annotations

from dataclasses import dataclass

from textagents.methods.core.config import MethodConfig
from textagents.methods.lgqd.deploy import STRATEGIES
from textagents.methods.lgqd.dt import DTSettings
from textagents.methods.lgqd.judge import JUDGE_SCORINGS

DESCRIBERS = ("llm", "template")
OUTPUT_ACTIVATIONS = ("identity", "tanh")


@dataclass(frozen=True)
class LGQDConfig(MethodConfig):
    """The pipeline's settings, stage by stage (``iterations``, ``checkpoint_every`` and the other
    ``MethodConfig`` fields are the decision transformer's training, ``model`` the describing LLM).

    Archive: novelty search on ``env_id`` over ``horizon`` steps; policies are MLPs ``5 -> hidden_size x
    hidden_layers -> 2`` with tanh hidden layers and an ``output_activation`` (the original: ``identity``,
    the env clips wheel speeds to +-4; ``tanh`` scales by 4); ``population`` parents and ``offspring``
    children per generation for ``generations``; polynomial bounded mutation (``mutation_eta``,
    ``mutation_indpb``, genes in [``gene_low``, ``gene_high``]); novelty over ``novelty_k`` nearest
    descriptors (the individual itself first); at most ``archive_additions`` random individuals a
    generation join the archive when their novelty exceeds ``archive_threshold``; the archive is cut back
    at random to ``archive_max``; a checkpoint every ``archive_checkpoint_every`` generations; coverage on a
    ``coverage_cells`` x ``coverage_cells`` grid over the map.

    Then ``dedupe_tolerance`` (real units; ``None``: keep every entry, as the original does), the env's
    annotation (every 40th step and the last, the paper's), descriptions by the ``describer`` (``llm``:
    the paper's three styles drawn with ``style_weights`` at ``temperature``, at most ``max_tokens``,
    ``describe_batch`` prompts a call; ``template``: a deterministic sentence from the annotation) of
    ``describe_items`` items drawn with ``seed`` (``None``: every item, the paper's), and a
    ``split_fractions`` train/val/test split of the described items drawn with ``seed``.

    The decision transformer learns the policies' actions rounded to 0.1 (``round_actions``, the original's
    records; ``false``: as the policies output them, ours before issue #32); each action dimension cut into
    ``action_clusters`` k-means clusters; a byte-level BPE tokenizer of ``tokenizer_vocab`` tokens trained on
    the train descriptions; the model's ``dt_*`` settings (``dt_settings``: ``DTSettings``' fields without the
    prefix, ``max_steps`` = ``horizon``); ``iterations`` optimizer steps on ``device`` (float32 whatever
    ``dtype``), validated every ``eval_every``. Deployed from each test description (the first
    ``deploy_items``; ``None``: all) for ``deploy_trials`` trials choosing clusters by ``deploy_strategy``;
    judged by the deterministic judge and by ``judge_model`` (``None``: ``model``) with at most
    ``judge_max_tokens`` a judgement, ``judge_batch`` cases a call;
    ``judge_scoring``: ``generate`` (the original: the LLM answers, the last ``score==`` line is the score)
    or ``expected`` (the same prompt scored: the expected score over 0.0 ... 1.0, ``judge.py``).
    """

    env_id: str = "Fastsim-Text-Household-v0"
    horizon: int = 400
    hidden_size: int = 10
    hidden_layers: int = 3
    output_activation: str = "identity"
    generations: int = 1000
    population: int = 50
    offspring: int = 50
    mutation_eta: float = 5.0
    mutation_indpb: float = 0.1
    gene_low: float = -1.0
    gene_high: float = 1.0
    novelty_k: int = 15
    archive_additions: int = 6
    archive_threshold: float = 0.5
    archive_max: int = 10_000
    archive_checkpoint_every: int = 10
    coverage_cells: int = 20
    dedupe_tolerance: float | None = None
    describer: str = "llm"
    style_weights: tuple[float, float, float] = (0.8, 0.1, 0.1)
    temperature: float = 0.2
    max_tokens: int = 256
    describe_batch: int = 16
    describe_items: int | None = None
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    action_clusters: int = 4
    round_actions: bool = True
    tokenizer_vocab: int = 1000
    dt_layers: int = 2
    dt_heads: int = 4
    dt_embedding: int = 360
    dt_dropout: float = 0.1
    dt_offset_head_hidden: int = 1024
    dt_condition_on_target: bool = True
    dt_round_bd: bool = True
    dt_bias: bool = False
    dt_batch_size: int = 30
    dt_learning_rate: float = 5e-3
    dt_min_learning_rate: float = 5e-5
    dt_warmup_steps: int = 1000
    dt_decay_steps: int = 300_000
    deploy_items: int | None = None
    deploy_trials: int = 5
    deploy_strategy: str = "sample"
    judge_model: str | None = None
    judge_max_tokens: int = 1024
    judge_batch: int = 8
    judge_scoring: str = "generate"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("style_weights", "split_fractions"):  # YAML gives lists
            object.__setattr__(self, name, tuple(getattr(self, name)))
        self.require_positive(
            "horizon",
            "hidden_size",
            "hidden_layers",
            "generations",
            "population",
            "archive_additions",
            "archive_max",
            "archive_checkpoint_every",
            "coverage_cells",
            "max_tokens",
            "describe_batch",
            "action_clusters",
            "tokenizer_vocab",
            "deploy_trials",
            "judge_max_tokens",
            "judge_batch",
        )
        self.dt_settings()  # checks the dt_* keys
        if self.deploy_items is not None and self.deploy_items < 1:
            raise ValueError(f"deploy_items must be >= 1 or null (every test item), got {self.deploy_items}")
        self.require_choice("judge_scoring", JUDGE_SCORINGS)
        self.require_choice("deploy_strategy", STRATEGIES)
        if self.describe_items is not None and self.describe_items < 1:
            raise ValueError(f"describe_items must be >= 1 or null (every item), got {self.describe_items}")
        self.require_choice("output_activation", OUTPUT_ACTIVATIONS)
        self.require_choice("describer", DESCRIBERS)
        if self.offspring < self.population:
            raise ValueError(f"offspring must be >= population (the original's rule), got {self.offspring}")
        if self.archive_additions > self.population + self.offspring:
            raise ValueError(
                f"archive_additions ({self.archive_additions}) cannot exceed population + offspring "
                f"({self.population + self.offspring}): the candidates are drawn from them"
            )
        if self.novelty_k < 2:
            raise ValueError(f"novelty_k must be >= 2 (the first neighbour is the individual), got {self.novelty_k}")
        if not self.gene_low < self.gene_high:
            raise ValueError(f"gene_low must be below gene_high, got [{self.gene_low}, {self.gene_high}]")
        if self.mutation_eta <= 0 or not 0 < self.mutation_indpb <= 1:
            raise ValueError(
                f"mutation_eta must be > 0 and mutation_indpb in (0, 1], got {self.mutation_eta}, {self.mutation_indpb}"
            )
        if self.archive_threshold < 0 or (self.dedupe_tolerance is not None and self.dedupe_tolerance < 0):
            raise ValueError("archive_threshold and dedupe_tolerance must be >= 0")
        for name in ("style_weights", "split_fractions"):
            values = getattr(self, name)
            if any(v < 0 for v in values) or abs(sum(values) - 1) > 1e-9:
                raise ValueError(f"{name} must be three non-negative numbers summing to 1, got {list(values)}")

    def dt_settings(self) -> DTSettings:
        """The decision transformer's settings from the ``dt_*`` keys (the others: ``DTSettings``' defaults)."""
        return DTSettings(
            layers=self.dt_layers,
            heads=self.dt_heads,
            embedding=self.dt_embedding,
            dropout=self.dt_dropout,
            offset_head_hidden=self.dt_offset_head_hidden,
            condition_on_target=self.dt_condition_on_target,
            round_bd=self.dt_round_bd,
            bias=self.dt_bias,
            max_steps=self.horizon,
            batch_size=self.dt_batch_size,
            learning_rate=self.dt_learning_rate,
            min_learning_rate=self.dt_min_learning_rate,
            warmup_steps=self.dt_warmup_steps,
            decay_steps=self.dt_decay_steps,
        )
