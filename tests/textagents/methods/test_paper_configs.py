"""Every method's paper config against the paper's and the original code's numbers.

Each ``benchmarks/methods/<method>/paper*.yaml`` is loaded as ``textagents method run`` loads it (LGQD's as
``textagents lgqd archive`` does), so the method's defaults are checked with it, and compared with a table: one
row per setting, with the paper's value and where it is written, a METHODS.md section or the original
repository's file:line at the commits of METHODS.md's table (GLAM @ 31847fb, lamorel @ dce6f0d; ELLM @ e068cf4;
background-knowledge-rl @ 5f62882; codellmpersonalize @ 47844d2; LanguageGroundedQD @ 2e7ba89). Where ours cannot
be the paper's, the row's ``substitute`` says what the paper had and why, and its value is our documented
substitute. Every field of a config is a row or is named in ``OURS`` with why it has no paper value, so a new
field must be put on one side.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from textagents.methods.core.config import MethodConfig, load_config
from textagents.methods.core.runner import LLMChoice
from textagents.methods.lgqd.config import LGQDConfig
from textagents.methods.registry import method_class

CONFIGS = Path(__file__).resolve().parents[3] / "benchmarks" / "methods"


@dataclass(frozen=True)
class Setting:
    """``name``: what is read from the resolved config (``Resolved``): a field, a property, a piece the method
    builds from the config, or ``a.b``: ``b`` of what ``a`` gives (a method is called, a mapping's key read);
    ``expected``: the paper's value, or our substitute where ``substitute`` says what the paper had and why
    ours differs; ``source``: where the paper's value is written; ``covers``: the config fields the value comes
    from, when they are not ``name``'s first part."""

    name: str
    expected: Any
    source: str
    substitute: str | None = None
    covers: tuple[str, ...] = ()

    def value(self, config: Resolved) -> Any:
        target: Any = config
        for part in self.name.split("."):
            target = target[part] if isinstance(target, Mapping) else getattr(target, part)
            if inspect.ismethod(target):
                target = target()
        return target

    def fields(self) -> tuple[str, ...]:
        return self.covers or (self.name.split(".")[0],)


class Resolved:
    """A config as its method uses it: the config's fields and properties, and ``pieces``: what the method
    builds from the config (name -> function of the config)."""

    def __init__(self, config: MethodConfig, pieces: Mapping[str, Callable[[Any], Any]]):
        self.config = config
        self.pieces = pieces

    def __getattr__(self, name: str) -> Any:
        if name in self.pieces:
            return self.pieces[name](self.config)
        return getattr(self.config, name)


def glam_llm_spec(config: Any) -> Any:
    from textagents.methods.glam.llm_learner import llm_spec

    return llm_spec(config, config.model)


def ellm_goal_sampling(config: Any) -> dict[str, Any]:
    from textagents.methods.ellm.prompt import SAMPLING

    return SAMPLING


def lgqd_genes(config: Any) -> int:
    from textagents.methods.lgqd.policies import genome_size, layer_sizes

    return genome_size(layer_sizes(config.hidden_size, config.hidden_layers))


def planner_sampling(config: Any) -> dict[str, Any]:
    from textagents.methods.llm_personalize.planner import PAPER_SAMPLING

    return PAPER_SAMPLING


#: Per method, what it builds from its config that the rows read.
PIECES: dict[str, dict[str, Callable[[Any], Any]]] = {
    "glam": {"llm_spec": glam_llm_spec},
    "ellm": {"goal_sampling": ellm_goal_sampling, "total_frames": lambda c: c.iterations * c.frames_per_iteration},
    "bk": {},
    "llm_personalize": {"planner_sampling": planner_sampling},
    "lgqd": {"genes": lgqd_genes},
}


def load_as_run(method: str, path: Path) -> MethodConfig:
    """``path`` read as ``textagents method run METHOD PATH`` reads it with no flags (``runner.run_method``);
    LGQD's as ``textagents lgqd archive PATH`` does (``archive_stage.run_archive``)."""
    if method == "lgqd":
        return load_config(LGQDConfig, path)
    return load_config(method_class(method).config_class, path, LLMChoice().config_overrides())


def same(value: Any, expected: Any) -> bool:
    """Equal in type and value: True is not 1, a list reads as a tuple, floats to 12 significant digits."""
    if expected is None or isinstance(expected, bool):
        return value is expected
    if isinstance(expected, float):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return number and math.isclose(value, expected, rel_tol=1e-12)
    if isinstance(expected, tuple | list):
        return (
            isinstance(value, tuple | list)
            and len(value) == len(expected)
            and all(same(v, e) for v, e in zip(value, expected, strict=True))
        )
    return type(value) is type(expected) and value == expected


def mismatches(config: Resolved, table: list[Setting]) -> list[str]:
    """One line per row whose value is not the one it expects."""
    wrong = []
    for row in table:
        value = row.value(config)
        if not same(value, row.expected):
            wrong.append(f"{row.name} = {value!r}, expected {row.expected!r} ({row.source})")
    return wrong


def original_updates(total_frames: int, batch: int) -> int:
    """The PPO updates background-knowledge-rl runs: ``total_timesteps // batch_size + 1`` (train_rs.py:93)."""
    return total_frames // batch + 1


GLAM_RUN = "experiments/campaign/Mixed_training/GFlan-T5_large.slurm"
GLAM_CONFIG = "experiments/configs/multi-node_slurm_cluster_config.yaml"
GLAM = [
    Setting("model", "google/flan-t5-large", f"{GLAM_RUN}:31,35-36 (Flan-T5-large, seq2seq)"),
    Setting("dtype", "float32", "lamorel load_hf_model_and_tokenizer.py:24 (from_pretrained with no torch_dtype)"),
    Setting("llm_backend", "transformers", "lamorel load_hf_model_and_tokenizer.py:3"),
    Setting("base_url", None, "lamorel runs the model in its own processes (no server)"),
    Setting("agent", "glam", f"{GLAM_RUN}:24 (train_language_agent.py)"),
    Setting("env_id", "BabyAI-Text-MixedTrainLocal-v0", f"{GLAM_RUN}:32"),
    Setting("test_env_ids", ("BabyAI-Text-MixedTestLocal-v0",), "METHODS.md GLAM (evaluation on MixedTestLocal)"),
    Setting("max_steps", None, "train_language_agent.py:405-407 (BabyAI's own step limit)"),
    Setting("envs", 32, f"{GLAM_RUN}:26"),
    Setting("frames_per_env", 40, f"{GLAM_CONFIG}:32"),
    Setting(
        "iterations",
        math.ceil(1_500_000 / (32 * 40)),
        f"{GLAM_RUN}:27 (num_steps=1500000); train_language_agent.py:336 (while num_frames < num_steps)",
    ),
    Setting("prompt_observations", 3, f"{GLAM_CONFIG}:52 (nbr_obs)"),
    Setting(
        "scoring", "paper", "lamorel d76c7c2 score_module_function.py:21-32; GLAM 84d8165^ llm_ppo_agent.py:102-121"
    ),
    Setting(
        "llm_spec.backend_options.candidate_special_tokens",
        True,
        "lamorel d76c7c2 hf_llm.py:185-186",
        covers=("candidate_special_tokens",),
    ),
    Setting("llm_spec.pretrained", True, f"{GLAM_CONFIG}:17 (pretrained: true)"),
    Setting("reward_scale", 20.0, "train_language_agent.py:41-45 (20 * reward if reward > 0)"),
    Setting("gamma", 0.99, f"{GLAM_CONFIG}:34"),
    Setting("learning_rate", 1e-6, f"{GLAM_CONFIG}:35"),
    Setting("gae_lambda", 0.99, f"{GLAM_CONFIG}:38"),
    Setting("entropy_coef", 0.01, f"{GLAM_CONFIG}:39"),
    Setting("value_coef", 0.5, f"{GLAM_CONFIG}:40"),
    Setting("max_grad_norm", 0.5, f"{GLAM_CONFIG}:41"),
    Setting("clip", 0.2, f"{GLAM_CONFIG}:43"),
    Setting("ppo_epochs", 4, f"{GLAM_CONFIG}:44"),
    Setting("minibatch_size", 64, f"{GLAM_CONFIG}:45"),
    Setting("lora_r", 0, "METHODS.md GLAM (full fine-tuning at lr 1e-6)"),
    Setting("value_head_width", 1024, "train_language_agent.py:85-107 (ValueHeadModuleFn)"),
    Setting("npae_policy", "action_head", "train_language_agent.py:109-133; NPAE-Flan-T5_large.slurm:36"),
    Setting("npae_load_embedding", True, "experiments/campaign/Mixed_training/NPAE-Flan-T5_large.slurm:35"),
    Setting("eval_episodes", 1000, "experiments/campaign/Mixed_tests_no-change/GFlan-T5_large.slurm:27"),
    Setting("test_eval_episodes", None, "METHODS.md GLAM (1000 episodes on each level; None: eval_episodes)"),
    Setting("eval_greedy", False, "agents/ppo/llm_ppo_agent.py:381-383 (actions sampled, argmax commented out)"),
]

ELLM_CONFIG = "config.yaml"
ELLM_RUN = "README.md:96 (the paper's Crafter command with an LLM)"
ELLM = [
    Setting("model", "code-davinci-002", f"{ELLM_CONFIG}:14"),
    Setting("goal_source", "llm", ELLM_RUN),
    Setting("llm_max_tokens", 200, f"{ELLM_CONFIG}:7,16"),
    Setting("goal_sampling.temperature", 0.1, f"{ELLM_CONFIG}:17"),
    Setting("goal_sampling.stop", ["\n\n"], "text_crafter/lm.py:194"),
    Setting(
        "prompt_source",
        "ours",
        "text_crafter/lm.py (BulletPrompt)",
        substitute="the original's prompt has no license: ours has its structure; prompt_source: original downloads it",
    ),
    Setting("answer_parsing", "original", "text_crafter/lm.py:76-91"),
    Setting("uniform_goals", None, f"{ELLM_CONFIG}:22 (max_num_goals: all)"),
    Setting("checks_action_success", True, f"{ELLM_CONFIG}:42 (check_ac_success)", covers=("check_action_success",)),
    Setting(
        "threshold",
        0.85,
        f"{ELLM_CONFIG}:37 (0.99)",
        substitute="the paper's 0.99 was for paraphrase-MiniLM-L3-v2; recalibrated for all-MiniLM-L6-v2 "
        "(docs/methods/ellm.md)",
    ),
    Setting(
        "adds_env_reward",
        False,
        "train.py:316-318 (the env's reward only for CrafterReward-v1)",
        covers=("env_reward",),
    ),
    Setting("env_id", "Crafter-Text-ELLM-v0", f"{ELLM_CONFIG}:11 (CrafterTextEnv-v1)"),
    Setting("action_space", "harder", f"{ELLM_CONFIG}:27"),
    Setting("hard_actions", True, f"{ELLM_CONFIG}:27; text_crafter/text_crafter/text_env.py:14, 37-46"),
    Setting("time_limit_terminal", True, f"{ELLM_CONFIG}:30; text_crafter/text_crafter/env.py:133-134"),
    Setting("language_state", True, ELLM_RUN),
    Setting("goal_conditioned", True, ELLM_RUN),
    Setting("goal_encoding", "joint", f"{ELLM_CONFIG}:114; dqn.py:123-125"),
    Setting("text_inputs", 1, "dqn.py:123-125 (one SBERT pass over caption and goal)"),
    Setting("dqn_encoder_init", "original", "dqn.py:204"),
    Setting("target_network", "shared_encoder", "dqn.py:239-243"),
    Setting("replay_sampling", "episode", "replay_buffer.py:132-134, 186-188"),
    Setting("clip_reward", True, f"{ELLM_CONFIG}:68"),
    Setting("total_frames", 5_000_000, f"{ELLM_CONFIG}:50", covers=("iterations", "frames_per_iteration")),
    Setting("frames_per_iteration", 25_000, f"{ELLM_CONFIG}:53 (eval_every_frames: an evaluation an iteration)"),
    Setting("eval_every", 1, f"{ELLM_CONFIG}:53"),
    Setting("eval_episodes", 10, f"{ELLM_CONFIG}:54"),
    Setting("eval_epsilon", 0.001, f"{ELLM_CONFIG}:103"),
    Setting("learning_rate", 6.25e-5, f"{ELLM_CONFIG}:80"),
    Setting("gamma", 0.99, f"{ELLM_CONFIG}:48"),
    Setting("n_steps", 3, f"{ELLM_CONFIG}:69"),
    Setting("batch_size", 64, f"{ELLM_CONFIG}:70"),
    Setting("buffer_size", 5_000_000, f"{ELLM_CONFIG}:63 (num_train_frames)"),
    Setting("learning_starts", 5000, f"{ELLM_CONFIG}:51"),
    Setting("train_every", 4, f"{ELLM_CONFIG}:105"),
    Setting("target_update_every", 8000, f"{ELLM_CONFIG}:99"),
    Setting("epsilon_end", 0.01, f"{ELLM_CONFIG}:100"),
    Setting("epsilon_frames", 1_000_000, f"{ELLM_CONFIG}:102"),
    Setting("adam_eps", 1e-8, "dqn.py:257 (torch's Adam, its default eps)"),
    Setting("max_grad_norm", None, "dqn.py:257 (no clipping)"),
    Setting(
        "frame_shape",
        (84, 84, 4),
        f"crafter_env.py:21, 94-102 (84 x 84, channel mean); {ELLM_CONFIG}:47 (4 frames)",
        covers=("frame_size", "greyscale", "frame_stack"),
    ),
    Setting("hidden", 512, f"{ELLM_CONFIG}:108"),
    Setting("head_layers", 2, "dqn.py:196-202 (V and A: two hidden layers each)"),
]

BK_CONFIG = "utils/config.py"
BK_SHARED = [
    Setting("model", "gpt-4-0613", "README.md:29,33,39,49 (--model_name gpt-4: gpt-4-0613)"),
    Setting(
        "prompt_source",
        "ours",
        "prompts/",
        substitute="the original's prompts have no license: ours have their structure; prompt_source: original "
        "downloads them",
    ),
    Setting("shaping_form", "original", "train_rs.py:166-175"),
    Setting("reward_scale", 10.0, f"{BK_CONFIG}:62,68,76 (ext_coef)"),
    Setting("gamma", 0.99, f"{BK_CONFIG}:38"),
    Setting("learning_rate", 3e-4, f"{BK_CONFIG}:36"),
    Setting("gae_lambda", 0.95, f"{BK_CONFIG}:39"),
    Setting("ppo_epochs", 4, f"{BK_CONFIG}:41"),
    Setting("clip", 0.1, f"{BK_CONFIG}:43"),
    Setting("value_clip", 0.1, f"{BK_CONFIG}:43-44 (clip_vloss at clip_coef)"),
    Setting("ent_coef", 0.01, f"{BK_CONFIG}:45"),
    Setting("vf_coef", 0.5, f"{BK_CONFIG}:46"),
    Setting("max_grad_norm", 0.5, f"{BK_CONFIG}:47"),
    Setting("time_limit_as_done", True, "train_rs.py:148"),
    Setting("policy_network", "cnn", "models/networks.py:80-116"),
    Setting("eval_every", 1, "train_rs.py:269 (an evaluation an iteration: frames_per_iteration)"),
    Setting("eval_deterministic", True, "models/networks.py:113-116 (select_action: argmax)"),
    Setting("eval_episodes", 50, f"{BK_CONFIG}:23,32"),
    Setting("goal_rounds", 500, "label_goals.py:75"),
    Setting("goal_samples", 3, "label_goals.py:78 (sequence_length)"),
    Setting("goal_rule", "original", "models/reward_provider.py:72-98"),
    Setting(
        "goal_similarity",
        0.4,
        f"{BK_CONFIG}:73 (0.85)",
        substitute="the paper's 0.85 was for bert-small; recalibrated for all-MiniLM-L6-v2 (docs/methods/bk.md)",
        covers=("goal_threshold",),
    ),
    Setting("pref_pairs", 5000, "README.md:39 (--dataset_size 5000); label_preference.py:79"),
    Setting("pref_window", 5, f"{BK_CONFIG}:61; label_preference.py:83"),
    Setting("pref_action", True, "models/preference_transformer.py:45-72 (action tokens)"),
    Setting("pref_labeller", "llm", "label_preference.py:80 (an LLM labels the pairs)"),
    Setting("pref_layers", 1, "train_preference_model.py:51"),
    Setting("pref_width", 128, "train_preference_model.py:50"),
    Setting("pref_heads", 1, "train_preference_model.py:52"),
    Setting("pref_epochs", 5, "train_preference_model.py:63"),
    Setting("pref_learning_rate", 3e-4, "train_preference_model.py:95"),
    Setting("pref_smoothing", 0.3, "train_preference_model.py:120"),
    Setting(
        "labelling_seed",
        42,
        "label_preference.py:82,88; train_preference_model.py:48,75-76 (labelled once for every RL seed)",
        covers=("labelling_seed",),
    ),
    Setting("llm_max_tokens", None, "utils/azure_llm.py:4-10 (no max_tokens: an answer runs until the model stops)"),
]
BK_BABYAI = [
    *BK_SHARED,
    Setting("env_id", "BabyAI-Text-GoToLocal-RedBall-S20-v0", f"{BK_CONFIG}:7"),
    Setting("shaping", "code", "README.md:63"),
    Setting("code_rounds", 20, "label_code.py:81"),
    Setting("code_samples", 5, "label_code.py:82"),
    Setting("code_file", None, "label_code.py (the LLM writes the code)"),
    Setting("envs", 8, f"{BK_CONFIG}:19"),
    Setting("steps_per_env", 128, f"{BK_CONFIG}:20"),
    Setting("minibatch_size", 256, f"{BK_CONFIG}:40; train_rs.py:60-61 (8 x 128 / 4)"),
    Setting("frames_per_iteration", 20 * 1024, f"{BK_CONFIG}:22; train_rs.py:269 (evaluated after >= 20,000)"),
    Setting("iterations", math.ceil(original_updates(5_000_000, 1024) / 20), f"{BK_CONFIG}:18; train_rs.py:93"),
]
BK_CRAFTER = [
    *BK_SHARED,
    Setting(
        "env_id",
        "Crafter-Text-v0",
        "crafter_text/__init__.py:6 (Crafter-Text-Reward)",
        substitute="the original's Crafter-Text-Reward is crafter's game, reward and 10,000-step episodes with "
        "ELLM's one-hit kills, leftover tiles and 20 actions; Crafter-Text-v0 is the nearest here",
    ),
    Setting("shaping", "goal", "label_goals.py:73 (--env crafter by default)"),
    Setting("envs", 16, f"{BK_CONFIG}:28"),
    Setting("steps_per_env", 256, f"{BK_CONFIG}:29"),
    Setting("minibatch_size", 1024, f"{BK_CONFIG}:40; train_rs.py:60-61 (16 x 256 / 4)"),
    Setting("frames_per_iteration", 5 * 4096, f"{BK_CONFIG}:31; train_rs.py:269 (evaluated after >= 20,000)"),
    Setting("iterations", math.ceil(original_updates(2_000_000, 4096) / 5), f"{BK_CONFIG}:27; train_rs.py:93"),
]

LP_YAML = "cos_eor/configs/local/igib_v2_nav_sp.yaml"
LP_DEMO = "experiments/annotate_human_demo_pair.ipynb"
LP_ST = "experiments/annotate_gpt3_pair.ipynb"
LP_EVAL = "experiments/evaluate_gpt3_pair_in_domain.ipynb"
LLM_PERSONALIZE = [
    Setting("model", "gpt-3.5-turbo-0613", f"{LP_YAML}:243; {LP_DEMO} cell 2 (FINETUNE_MODEL)"),
    Setting("fine_tuning", "openai", f"{LP_DEMO} cell 21, {LP_ST} cell 17 (FineTuningJob.create)"),
    Setting("epochs", 1.0, f"{LP_DEMO} cell 21, {LP_ST} cell 17 (n_epochs 1)"),
    Setting("iterations", 3, f"{LP_EVAL} cell 3 (bootstrap, finetune iter 1, finetune iter 2)"),
    Setting("eval_every", 1, f"{LP_EVAL} cell 3 (every planner evaluated)"),
    Setting(
        "scenes", ("Pomaria_1_int", "Merom_1_int", "Pomaria_2_int", "Rs_int"), "cos_eor/configs/local/envs_paper.yaml"
    ),
    Setting("train_demonstrations", 10, "experiments/bt_6_m1_train_pair/info.yaml (num_train_episodes)"),
    Setting("validation_demonstrations", 2, "experiments/bt_6_m1_train_pair/info.yaml (num_valid_episodes)"),
    Setting("self_training_rollouts", 80, f"{LP_ST} cell 3 (every log with index mod 25 >= 5: 80 of 100)"),
    Setting("eval_episodes", 80, f"{LP_EVAL} cell 4 (every log: 20 test and 80 train a scene)"),
    Setting("baseline_eval_episodes", None, f"{LP_EVAL} cell 4 (the baselines' logs: every episode, as the planner's)"),
    Setting("baseline_command_budget", None, f"{LP_YAML}:201 (one prompt_threshold, the baselines' too)"),
    Setting("sampling.max_tokens", 256, f"{LP_YAML}:245", covers=("max_new_tokens",)),
    Setting("sampling.temperature", 1.0, f"{LP_YAML}:246", covers=("temperature",)),
    Setting("sampling.top_p", 0.9, f"{LP_YAML}:247", covers=("top_p",)),
    Setting("sampling.presence_penalty", 0.2, f"{LP_YAML}:250", covers=("presence_penalty",)),
    Setting("sampling.frequency_penalty", 0.2, f"{LP_YAML}:251", covers=("frequency_penalty",)),
    Setting("planner_sampling.stop", ("\\n",), f"{LP_YAML}:252 ('\\n' in single quotes: a backslash and an n)"),
    Setting("plan_rules.max_steps", 10, f"{LP_YAML}:208-209", covers=("max_steps_per_plan",)),
    Setting("plan_rules.command_budget", 150, f"{LP_YAML}:201 (prompt_threshold)", covers=("command_budget",)),
    Setting("plan_rules.fail_threshold", 30, f"{LP_YAML}:200", covers=("fail_threshold",)),
    Setting("plan_rules.parser", "original", "cos_eor/policy/llm_planner.py:36-73, 265-285", covers=("parser",)),
    Setting(
        "baselines",
        ("sayplan",),
        f"{LP_EVAL} cell 3 (SAYPLAN, SAYCAN)",
        substitute="the paper's SayCan generates (llm_planner.py:981-1195); ours scores the admissible commands, "
        "which OpenAI's chat models cannot: SayPlan-style replanning only",
    ),
]

LGQD_DATA = "src/dataset_tools.py"
LGQD_CONFIG = "src/config/config.yaml"
LGQD_TRAIN = 4780  # int(0.8 * 5975): the train split of seed 0's archive at these settings (docs/methods/lgqd.md)
LGQD = [
    Setting("seed", 0, f"{LGQD_CONFIG}:56"),
    Setting("env_id", "Fastsim-Text-Household-v0", f"{LGQD_DATA}:39 (NavigationEnv)"),
    Setting("horizon", 400, "src/NavigationEnv.py:31"),
    Setting("hidden_size", 10, f"{LGQD_DATA}:57"),
    Setting("hidden_layers", 3, f"{LGQD_DATA}:56"),
    Setting("output_activation", "identity", f"{LGQD_DATA}:55 (no output normalisation)"),
    Setting("genes", 302, "METHODS.md language-grounded QD (302-parameter MLPs)"),
    Setting("generations", 1000, f"{LGQD_DATA}:96"),
    Setting("population", 50, f"{LGQD_DATA}:53"),
    Setting("offspring", 50, f"{LGQD_DATA}:84"),
    Setting("mutation_eta", 5.0, f"{LGQD_DATA}:67"),
    Setting("mutation_indpb", 0.1, f"{LGQD_DATA}:70"),
    Setting("gene_low", -1.0, f"{LGQD_DATA}:68"),
    Setting("gene_high", 1.0, f"{LGQD_DATA}:69"),
    Setting("novelty_k", 15, f"{LGQD_DATA}:41"),
    Setting("archive_additions", 6, f"{LGQD_DATA}:43"),
    Setting("archive_threshold", 0.5, "src/NavigationEnv.py:57; src/NS.py:303"),
    Setting("archive_max", 10_000, f"{LGQD_DATA}:42"),
    Setting("archive_checkpoint_every", 10, f"{LGQD_DATA}:96 (save_frequency)"),
    Setting("dedupe_tolerance", None, f"{LGQD_DATA}:662-671 (duplicates kept)"),
    Setting("model", "gpt-3.5-turbo", "src/get_trajectory_description.py:153"),
    Setting("describer", "llm", "src/get_trajectory_description.py:150-161"),
    Setting("style_weights", (0.8, 0.1, 0.1), "src/get_trajectory_description.py:127-136"),
    Setting("temperature", 0.2, "src/get_trajectory_description.py:161"),
    Setting("describe_items", None, "METHODS.md language-grounded QD (every archive entry described)"),
    Setting("split_fractions", (0.8, 0.1, 0.1), f"METHODS.md language-grounded QD; {LGQD_DATA}:673-688"),
    Setting("action_clusters", 4, f"{LGQD_DATA}:137-200; src/utils/kmeans/cluster_centers_per_dim_4_4.pkl.gz"),
    Setting("round_actions", True, "src/NavigationEnv.py:138-139"),
    Setting("dt_settings.layers", 2, f"{LGQD_CONFIG}:9", covers=("dt_layers",)),
    Setting("dt_settings.heads", 4, f"{LGQD_CONFIG}:10", covers=("dt_heads",)),
    Setting("dt_settings.embedding", 360, f"{LGQD_CONFIG}:11", covers=("dt_embedding",)),
    Setting("dt_settings.bias", False, f"{LGQD_CONFIG}:12", covers=("dt_bias",)),
    Setting("dt_settings.dropout", 0.1, f"{LGQD_CONFIG}:13", covers=("dt_dropout",)),
    Setting(
        "dt_settings.condition_on_target", True, f"{LGQD_CONFIG}:52 (ablate_bd)", covers=("dt_condition_on_target",)
    ),
    Setting("dt_settings.round_bd", True, "src/nanoGPT_QDRL/model.py:326, 813", covers=("dt_round_bd",)),
    Setting("dt_settings.cluster_head_hidden", 64, "src/nanoGPT_QDRL/model.py:369-390 (RLMLP h 32: 64 wide)"),
    Setting(
        "dt_settings.offset_head_hidden",
        1024,
        "src/nanoGPT_QDRL/model.py:369-390 (h 512, predicting K^D x D offsets)",
        substitute="ours predicts only the D x K offsets the original reads (docs/methods/lgqd.md)",
        covers=("dt_offset_head_hidden",),
    ),
    Setting("dt_settings.max_steps", 400, "src/NavigationEnv.py:31"),
    Setting("dt_settings.batch_size", 30, f"{LGQD_CONFIG}:25", covers=("dt_batch_size",)),
    Setting("dt_settings.learning_rate", 5e-3, f"{LGQD_CONFIG}:28", covers=("dt_learning_rate",)),
    Setting("dt_settings.weight_decay", 0.1, f"{LGQD_CONFIG}:29"),
    Setting("dt_settings.beta1", 0.9, f"{LGQD_CONFIG}:30"),
    Setting("dt_settings.beta2", 0.95, f"{LGQD_CONFIG}:31"),
    Setting("dt_settings.grad_clip", 0.0, f"{LGQD_CONFIG}:32"),
    Setting("dt_settings.decay_steps", 300_000, f"{LGQD_CONFIG}:35", covers=("dt_decay_steps",)),
    Setting("dt_settings.warmup_steps", 1000, f"{LGQD_CONFIG}:36", covers=("dt_warmup_steps",)),
    Setting("dt_settings.min_learning_rate", 5e-5, f"{LGQD_CONFIG}:37", covers=("dt_min_learning_rate",)),
    Setting("dt_settings.focal_gamma", 2.0, "src/nanoGPT_QDRL/model.py:545-585"),
    Setting("dt_settings.offset_weight", 1.0, "src/nanoGPT_QDRL/model.py:545-585"),
    Setting(
        "iterations",
        5000 * math.ceil(LGQD_TRAIN / 30),
        f"{LGQD_CONFIG}:23 (max_epochs 5000; our iterations are optimizer steps, ceil(train items / 30) an epoch)",
    ),
    Setting("eval_every", 5 * math.ceil(LGQD_TRAIN / 30), f"{LGQD_CONFIG}:24 (val_frequ: every 5 epochs)"),
    Setting("deploy_items", None, "src/LanguageConditionedQDRLTransformer.py:541 (every test prompt)"),
    Setting("deploy_trials", 5, "src/LanguageConditionedQDRLTransformer.py:553"),
    Setting("deploy_strategy", "sample", f"{LGQD_CONFIG}:50"),
    Setting("judge_model", "gpt-4-0314", "src/eval_trajectory.py:141"),
    Setting("judge_scoring", "generate", "src/eval_trajectory.py:140-159 (the answer's score== line)"),
]

#: Settings of ours in every method: how a run is kept, where the key is read, the room a local model gets;
#: none of them the paper's.
RUN_KEEPING = {
    "llm_context": "llama.cpp's context for a local model (the papers' LLMs are served)",
    "checkpoint_every": "how often a run is saved",
    "keep_checkpoints": "how many saves are kept",
    "api_key_env": "where an API key is read from",
    "device": "where the models run",
    "max_concurrency": "requests in flight to a server: speed only",
}
SERVED = {
    "seed": "any seed (the papers ran several)",
    "llm_backend": "the paper's LLM is served: --base-url",
    "base_url": "given on the command line (a config alone never sends an API key)",
    "dtype": "no local LLM in the paper's setting",
}
BK_OURS = {
    **RUN_KEEPING,
    **SERVED,
    "code_cache_entries": "Φ's cost, not its value",
    "code_batch": "Φ's cost, not its value",
    "pref_max_tokens": "our snippets are text (the original's are images)",
    "vec_env": "where the envs run: the same rollouts (sync is the original's)",
}
#: Per config file, its fields that are ours (name -> why there is no paper value).
OURS: dict[str, dict[str, str]] = {
    "glam/paper.yaml": {
        **RUN_KEEPING,
        "seed": "any seed (the campaign ran seeds 1 and 2)",
        "eval_every": "the paper tests after training (post-training_tests.py); ours also along the way",
        "micro_batch": "gradient accumulation: the same update",
        "forward_batch": "prompts a forward pass: the same numbers to float rounding",
        "cross_attention": "how the decoder's cross-attention is computed: the same numbers to float rounding",
        "llm_processes": "the same update in 1 or N processes",
        "score_cache": "speed only: the same numbers",
        "prefix_sharing": "speed only: the same numbers to float rounding",
        "test_levels_every": "ours: fewer test-level evaluations",
        "baseline_learning_rate": "the DRRN and symbolic PPO baselines are ours",
        "drrn_hidden": "the DRRN baseline is ours",
        "drrn_updates": "the DRRN baseline is ours",
        "replay_capacity": "the DRRN baseline is ours",
    },
    "ellm/paper.yaml": {
        **RUN_KEEPING,
        **SERVED,
        "cuda_graphs": "speed only on CUDA: the same updates",
        "replay_on_device": "where the replay's frames are kept: the same batches",
    },
    "bk/paper.yaml": BK_OURS,
    "bk/paper_crafter.yaml": {
        **BK_OURS,
        "code_rounds": "BK-Code has no Crafter labelling in the original (label_code.py:78)",
        "code_samples": "BK-Code has no Crafter labelling in the original (label_code.py:78)",
        "code_file": "BK-Code has no Crafter labelling in the original (label_code.py:78)",
    },
    "llm_personalize/paper.yaml": {
        **RUN_KEEPING,
        **SERVED,
        "lora": "local fine-tuning only (the paper's is OpenAI's)",
        "lora_r": "local fine-tuning only",
        "learning_rate": "local fine-tuning only",
        "batch_size": "local fine-tuning only",
        "micro_batch": "local fine-tuning's memory: the same update",
        "max_length": "local fine-tuning only",
        "openai_poll_s": "how often the fine-tuning job is polled",
        "rollout_backend": "where the planner generates (local runs): speed only",
        "rollout_gguf": "the llama.cpp export's precision (local runs)",
        "rollout_state_cache_mb": "llama.cpp's KV states kept between calls (local runs, speed)",
        "rollout_stop_after_read_steps": "llama.cpp stops a plan past the steps read (local runs, speed)",
        "rollout_parallel": "how many plans llama.cpp decodes together (local runs, speed)",
        "eval_planner": "which planner an evaluation plays (method eval): the run's own during training",
        "served_weights": "how a served planner gets each round's weights (the paper's: OpenAI's fine-tuning API)",
        "serve_command": "the server command of served_weights: restart",
        "serve_port": "the port of served_weights: restart",
        "serve_timeout_s": "how long a restarted server may take to start",
    },
    "lgqd/paper.yaml": {
        **RUN_KEEPING,
        "llm_backend": SERVED["llm_backend"],
        "base_url": SERVED["base_url"],
        "dtype": "the DT trains in float32 whatever dtype; the LLMs are served",
        "coverage_cells": "a measure of ours",
        "max_tokens": "a bound of ours (the original set none)",
        "describe_batch": "prompts a call",
        "tokenizer_vocab": "our BPE tokenizer is trained on the train descriptions (the original ships its own)",
        "judge_max_tokens": "a bound of ours (the original set none)",
        "judge_batch": "cases a call",
    },
}

#: (method, config file, table): every paper config and the rows it is checked against.
PAPER_CONFIGS = [
    ("glam", "glam/paper.yaml", GLAM),
    ("ellm", "ellm/paper.yaml", ELLM),
    ("bk", "bk/paper.yaml", BK_BABYAI),
    ("bk", "bk/paper_crafter.yaml", BK_CRAFTER),
    ("llm_personalize", "llm_personalize/paper.yaml", LLM_PERSONALIZE),
    ("lgqd", "lgqd/paper.yaml", LGQD),
]
CASES = [pytest.param(method, file, table, id=file) for method, file, table in PAPER_CONFIGS]


def resolved(method: str, file: str, overrides: dict[str, Any] | None = None, path: Path | None = None) -> Resolved:
    config = load_as_run(method, path or CONFIGS / file)
    if overrides:
        config = dataclasses.replace(config, **overrides)
    return Resolved(config, PIECES[method])


@pytest.mark.parametrize(("method", "file", "table"), CASES)
def test_a_paper_config_holds_the_papers_settings(method, file, table):
    assert mismatches(resolved(method, file), table) == []


@pytest.mark.parametrize(("method", "file", "table"), CASES)
def test_every_field_is_checked_or_named_ours(method, file, table):
    fields = {f.name for f in dataclasses.fields(load_as_run(method, CONFIGS / file))}
    checked = {name for row in table for name in row.fields()}
    ours = set(OURS[file])
    assert sorted(fields - checked - ours) == [], "neither a row nor in OURS"
    assert sorted(checked & ours) == [], "both a row and in OURS"
    assert sorted(ours - fields) == [], "in OURS but no such field"


@pytest.mark.parametrize(
    ("file", "change", "row"),
    [
        ("glam/paper.yaml", {"gae_lambda": 0.95}, "gae_lambda"),  # a default
        ("glam/paper.yaml", {"candidate_special_tokens": False}, "llm_spec.backend_options.candidate_special_tokens"),
        ("ellm/paper.yaml", {"frame_stack": 1}, "frame_shape"),
        ("ellm/paper.yaml", {"check_action_success": False}, "checks_action_success"),
        ("bk/paper.yaml", {"value_clip": None}, "value_clip"),  # a default
        ("bk/paper_crafter.yaml", {"goal_threshold": 0.85}, "goal_similarity"),
        ("llm_personalize/paper.yaml", {"frequency_penalty": 0.0}, "sampling.frequency_penalty"),
        ("lgqd/paper.yaml", {"dt_offset_head_hidden": 512}, "dt_settings.offset_head_hidden"),  # a default
    ],
)
def test_a_setting_moved_from_the_paper_is_named(file, change, row):
    method, _, table = next(case for case in PAPER_CONFIGS if case[1] == file)
    wrong = mismatches(resolved(method, file, change), table)
    assert [line.split(" = ")[0] for line in wrong] == [row]


def test_an_edited_file_fails_its_row(tmp_path):
    edited = tmp_path / "paper.yaml"
    text = (CONFIGS / "llm_personalize" / "paper.yaml").read_text()
    edited.write_text(text.replace("presence_penalty: 0.2", "presence_penalty: 0.0"))
    wrong = mismatches(resolved("llm_personalize", "", path=edited), LLM_PERSONALIZE)
    assert wrong == [f"sampling.presence_penalty = 0.0, expected 0.2 ({LP_YAML}:250)"]
