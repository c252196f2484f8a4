"""``glam``: an LLM policy on BabyAI-Text fine-tuned online with PPO (Carta et al. 2023), and the paper's
baselines on the same envs and frame budget.

``agent``: ``glam`` (the pretrained LLM as the policy, PPO where it lives: ``llm_learner.py``), ``npae`` (the
same architecture with fresh random weights), ``drrn`` (``drrn.py``), ``symbolic_ppo`` (SB3's PPO on
minigrid's grid encoding: ``symbolic_ppo.py``). Each iteration trains on ``envs`` x ``frames_per_env`` new
frames; iteration 1 first evaluates the untrained agent (``zero_shot/...``). Evaluation: ``eval_episodes``
on the training level and each test level, success = return > 0.
"""

from __future__ import annotations

from typing import Any

from textagents.methods.core.config import ConfigError
from textagents.methods.core.method import Method, RunContext
from textagents.methods.core.run_dir import Checkpoint
from textagents.methods.glam.config import GlamConfig
from textagents.methods.glam.learner import Learner
from textagents.methods.glam.report import glam_sections, success_curves


def make_learner(config: GlamConfig) -> Learner:
    if config.agent in ("glam", "npae"):
        if config.model is None:
            raise ConfigError("GLAM fine-tunes a local transformers model: set `model:` or pass --model")
        if config.base_url is not None:
            raise ConfigError("GLAM fine-tunes the model in this machine's processes: --base-url is not supported")
        from textagents.methods.glam.llm_learner import LLMLearner

        return LLMLearner(config, config.model)
    if config.agent == "drrn":
        from textagents.methods.glam.drrn import DRRNLearner

        return DRRNLearner(config)
    from textagents.methods.glam.symbolic_ppo import SymbolicPPOLearner

    return SymbolicPPOLearner(config)


class GlamMethod(Method):
    name = "glam"
    summary = "GLAM: an LLM policy on BabyAI-Text fine-tuned online with PPO (lamorel-style caller)"
    config_class = GlamConfig
    comparison_x = "training frames"

    def __init__(self, config: GlamConfig, context: RunContext):
        super().__init__(config, context)
        self.learner = make_learner(config)
        self.iteration: int | None = None  # None outside training (`method eval`): every level

    def train_iteration(self, iteration: int) -> dict[str, Any]:
        self.iteration = iteration
        zero_shot = {}
        if iteration == 1:
            zero_shot = {f"zero_shot/{k}": v for k, v in self.learner.evaluate().items() if k != "frames"}
        return {**zero_shot, **self.learner.train_frames(iteration)}

    def evaluate(self) -> dict[str, Any]:
        return self.learner.evaluate(test_levels=self._test_levels_now())

    def _test_levels_now(self) -> bool:
        """At every ``test_levels_every``-th evaluation, at the last iteration, and outside training."""
        config = self.config
        if self.iteration is None or self.iteration == config.iterations or not config.eval_every:
            return True
        return (self.iteration // config.eval_every) % config.test_levels_every == 0

    def checkpoint(self, iteration: int) -> Checkpoint:
        state, tensors = self.learner.state()
        return Checkpoint(iteration, state, tensors)

    def restore(self, checkpoint: Checkpoint) -> None:
        self.learner.restore(checkpoint.state, checkpoint.tensors)

    def report_sections(self, metrics: list[dict[str, Any]]) -> list[str]:
        return glam_sections(metrics, self.config, self.context.run_dir)

    @staticmethod
    def comparison_curves(metrics: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
        """Success rate against frames per evaluated level, from the untrained agent on."""
        return {f"{level} success rate": points for level, points in success_curves(metrics).items()}

    def close(self) -> None:
        self.learner.close()
