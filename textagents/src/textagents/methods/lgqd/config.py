"""Language-grounded QD's settings (Salehi & Doncieux 2023; METHODS.md): one config for the whole pipeline,
read by every stage from the pipeline folder's ``config.json``."""

from __future__ import annotations

from dataclasses import dataclass

from textagents.methods.core.config import MethodConfig

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
    ``describe_batch`` prompts a call; ``template``: a deterministic sentence from the annotation), and a
    ``split_fractions`` train/val/test split drawn with ``seed``.
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
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)

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
        )
        if self.output_activation not in OUTPUT_ACTIVATIONS:
            raise ValueError(
                f"output_activation must be one of {list(OUTPUT_ACTIVATIONS)}, got {self.output_activation!r}"
            )
        if self.describer not in DESCRIBERS:
            raise ValueError(f"describer must be one of {list(DESCRIBERS)}, got {self.describer!r}")
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
