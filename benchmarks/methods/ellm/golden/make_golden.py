"""Golden outputs of ELLM's original code (yuqingd/ellm @ e068cf464d3808aa7ba97f4dcf9667b1721c9b43) for
tests/textagents/methods/test_ellm.py. Not imported by the package.

- ``ellm_parser.json``: ``BulletPrompt.parse_response`` (text_crafter/lm.py:76-91), taken out of the file at
  that commit with ``ast`` and run unchanged on fixed answers; ``None`` where it raises ``ValueError`` (the
  caller, ``GPTLanguageModel.predict_options`` lm.py:381-395, then returns no goal and caches nothing), and
  the caller's de-duplication (lm.py:397, ``list(set(...))``) applied as a sorted list since a set has no order.
- ``ellm_threshold.json``: the reward test of ``CrafterLMGoalWrapper.text_reward``
  (text_crafter/text_crafter/goal_wrapper.py:302-308), transcribed in ``text_reward`` below because the
  method needs the sentence encoder: a suggestion pays when ``cos_score > self.threshold``.
- ``ellm_joint.json``: the goal-conditioned DQN's text input, the token ids its frozen encoder reads, transcribed
  below (``original_joined_ids``) from ``BaseTextEnv.text_obs`` and ``tokenize_obs``
  (text_crafter/text_crafter/text_env.py:135-139, 212-217), the goal string of ``_get_full_obs``
  (goal_wrapper.py:382-386), ``tokenize_str``'s SBERT branch and ``pad_sbert`` (text_env.py:182-183, 200-206,
  200 ids: config.yaml ``max_seq_tokens``) and the join in ``Encoder.forward`` (dqn.py:124). The tokenizer is
  all-MiniLM-L6-v2's (offline; the original's paraphrase-MiniLM-L3-v2 has the same uncased BERT vocabulary).
- ``ellm_health.json``: ``health_reward`` of text_crafter's ``Env.step`` (text_crafter/text_crafter/env.py:118-132),
  transcribed in ``health_reward`` below: line 132 sets it to 0 whatever the health did, so the wrapper's
  ``reward = health_reward + text_reward`` (goal_wrapper.py:608-609) is the text reward alone.
- ``ellm_actions.json``: the action spaces. ``BaseTextEnv.action_names``, ``unflatten_ac`` and
  ``get_action_name`` (text_crafter/text_crafter/text_env.py:14, 77-125), taken out of the file with ``ast``
  and run unchanged on ``data_text.yaml``'s lists: the names of the ``harder`` space (config.yaml
  ``action_space_type: harder``) in order, the name each index plays (``step``, text_env.py:61-64), the
  ``easier`` space's names and ``good_action_names``. Then what each of the 139 actions does in scripted
  situations: the original's ``Player.update`` (objects.py:103-180, with its ``engine.py`` and the
  ``constants`` that its ``constants.py`` loads from ``data_text.yaml``) on a 9x9 grass world, the player in the
  middle facing right at the situation's material and object: both success flags and every change (the tile in
  front, the object's health, inventory, achievements, position, facing, sleep). The situations are in the
  file, so the test builds the same ones for ours.
- ``ellm_weight_init.json``: ``utils.weight_init`` (utils.py:62-71), taken out with ``ast`` and run unchanged by
  ``Module.apply`` (as ``Critic.__init__``, dqn.py:204) on a small BERT (``transformers``' ``BertModel``, the
  SBERT's class) whose parameters are all random (``small_bert``), then initialised at
  ``torch.manual_seed(0)``: each parameter's name, whether it changed, and its values.
- ``ellm_target.json``: the target network. ``ImageEncoder``, ``Encoder``, ``Critic`` and ``DQNAgent``
  (dqn.py:78-381), taken out with ``ast`` and run unchanged with ``utils.weight_init``, ``soft_update_params``
  and ``to_torch`` (utils.py:41-71) on pixels only (config.yaml's ``use_language_state: null``, ``use_goal:
  false``, so no SBERT), ``hidden_dim`` 8, 5 actions, lr 1e-3, the target synced every 3 steps with
  ``critic_target_tau`` 1 (config.yaml). Its weights are then set by ``recipe_weights`` (named, so the test sets
  ours alike) and ``DQNAgent.update`` runs 4 times on one fixed batch (``target_batch``): each update's
  ``critic_loss`` and the target's and the online critic's Q values on the batch's next observations, before
  the first update and after each.
- ``ellm_replay.json``: the replay buffer. ``ReplayBufferStorage`` and ``ReplayBuffer`` with the helpers they
  call (replay_buffer.py:16-213), taken out with ``ast`` and run unchanged on a scripted stream of episodes
  (``REPLAY_RUN``: each ends with discount 0, as every episode of the original's env, crafter_env.py:119-120,
  with observation ids ``20 * episode + step``), with its ``clip_reward: true``, ``nstep`` 3 and ``discount``
  0.99 (config.yaml), one worker and a fetch before every sample. ``draws`` samples at
  ``np.random.seed(seed)``: for every (episode, start) drawn, the n-step reward (float16 in the original, its
  reward spec), the discount, the next observation's step, and how often it was drawn; then ``capacity``: the
  episodes held after each one is stored into a buffer of that many transitions.

    python benchmarks/methods/ellm/golden/make_golden.py /work/.mirror/yuqingd+ellm/repo
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

COMMIT = "e068cf464d3808aa7ba97f4dcf9667b1721c9b43"
OUT = Path(__file__).resolve().parents[4] / "tests" / "textagents" / "methods" / "golden"

ANSWERS = [
    "- Chop tree\n- Attack cow",
    "- Chop tree.\n- Drink water.",
    "- chop tree\n- chop tree\n- Mine Stone",
    "- Chop tree\nI would also rest.",
    "- Chop tree\n",
    "",
    "\n- Chop tree",
    " - Chop tree",
    "- Eat plant\n```",
    '- Eat plant\n"""',
    "- Eat plant\n```\n",
    "- place crafting-table",
    "-Sleep",
    "- ",
    "-",
    "- Chop tree\n- ",
    "- Attack zombie\n-  Drink water  \n- Place stone.",
    "Chop tree",
    "- Make wood pickaxe\n- Make wood sword\n- Place crafting table",
    "- Chop tree\n\n- Drink water",
    "- Mine stone - mine coal",
    "- Chop tree\t",
]

PAIRS = [(0.99, 0.99), (0.990001, 0.99), (0.989999, 0.99), (1.0, 0.99), (0.85, 0.85), (0.86, 0.85), (1.0, 1.0)]


def parse_response_of_original(repo: str):
    source = subprocess.run(
        ["git", "--git-dir", repo, "show", f"{COMMIT}:text_crafter/lm.py"], capture_output=True, text=True, check=True
    ).stdout
    tree = ast.parse(source)
    bullet = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BulletPrompt")
    method = next(n for n in bullet.body if isinstance(n, ast.FunctionDef) and n.name == "parse_response")
    namespace: dict = {}
    exec(compile(ast.Module([method], []), "lm.py", "exec"), namespace)  # trusted: the pinned original's own function
    return namespace["parse_response"]


def text_reward(cos_score: float, threshold: float) -> bool:
    """goal_wrapper.py:304: ``if cos_score > self.threshold:``."""
    return cos_score > threshold


JOINT_CASES = [
    ("you see grass, tree, and cow. you are targeting grass.", "", "", ["chop tree", "attack cow"]),
    ("you see water and sand.", "you have in your inventory wood, sapling.", "you feel thirsty.", ["drink water"]),
    ("you see stone.", "", "you feel hungry, sleepy.", []),
    ("you see " + ", ".join(["grass"] * 150) + ".", "", "", ["Place Stone "]),
]

HEALTH_CASES = [(9, 9, True), (8, 9, True), (9, 7, True), (0, 3, True), (5, 9, False)]


def original_joined_ids(tokenizer, view: str, inv: str, status: str, goals: list[str]) -> list[int]:
    """text_env.py:138-139 (lower-cased parts), 212-217 (text_obs + " " + each part + " " unless "." or "null"),
    goal_wrapper.py:382-386 (the goal string), text_env.py:183 then 200-206 (ids, cut and zero-padded to 200),
    dqn.py:124 (caption row, then goal row)."""
    text_obs = view.lower() + " "
    for value in {"inv": inv.lower(), "status": status.lower()}.values():
        if value != "." and "null" not in value:
            text_obs += value + " "
    goal_str = "Your goal is: " + " ".join([s.lower().strip() for s in goals]) + "."

    def pad_sbert(input_arr: list[int]) -> list[int]:
        arr = [0] * 200
        input_arr = input_arr[:200]
        arr[: len(input_arr)] = input_arr
        return arr

    return pad_sbert(tokenizer(text_obs)["input_ids"]) + pad_sbert(tokenizer(goal_str)["input_ids"])


def health_reward(health: int, last_health: int, dying: bool) -> float:
    """text_crafter/text_crafter/env.py:118-132."""
    reward = (health - last_health) / 10
    if not dying:
        reward = 0
    reward = 0
    return reward


def _show(repo: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, "show", f"{COMMIT}:{path}"], capture_output=True, text=True, check=True
    ).stdout


def _functions(source: str, names: tuple[str, ...], owner: str | None = None) -> list[ast.stmt]:
    """The top-level statements (or those of class ``owner``) named ``names``, in the file's order."""
    body = ast.parse(source).body
    if owner is not None:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner).body
    return [
        n
        for n in body
        if (isinstance(n, ast.FunctionDef) and n.name in names)
        or (isinstance(n, ast.Assign) and any(getattr(t, "id", None) in names for t in n.targets))
    ]


def original_text_crafter(repo: str, where: Path):
    """The original's ``constants`` (its ``constants.py`` loads ``data_text.yaml`` into module globals),
    ``engine`` and ``objects`` modules, importable from ``where``."""
    import types

    import yaml

    package = where / "text_crafter" / "text_crafter"
    package.mkdir(parents=True)
    (where / "text_crafter" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")  # its own imports the gym envs, which need none of this
    for name in ("engine.py", "objects.py"):
        (package / name).write_text(_show(repo, f"text_crafter/text_crafter/{name}"))
    constants = types.ModuleType("text_crafter.text_crafter.constants")
    constants.__dict__.update(yaml.safe_load(_show(repo, "text_crafter/text_crafter/data_text.yaml")))
    sys.modules[constants.__name__] = constants
    sys.path.insert(0, str(where))
    return (
        constants,
        importlib.import_module("text_crafter.text_crafter.engine"),
        importlib.import_module("text_crafter.text_crafter.objects"),
    )


def original_action_space(repo: str, constants) -> type:
    """``BaseTextEnv``'s action naming (text_env.py), its methods unchanged, on a bare class."""
    source = _show(repo, "text_crafter/text_crafter/text_env.py")
    module = ast.Module(_functions(source, ("VERB_ONLY",)), [])
    methods = _functions(source, ("action_names", "unflatten_ac", "get_action_name"), owner="BaseTextEnv")
    module.body.append(ast.ClassDef(name="TextEnvNaming", bases=[], keywords=[], body=methods, decorator_list=[]))
    ast.fix_missing_locations(module)
    namespace: dict = {"constants": constants}
    exec(compile(module, "text_env.py", "exec"), namespace)  # trusted: the pinned original's own functions
    return namespace["TextEnvNaming"]


#: The situations in front of the player (facing right in the middle of a 9x9 grass world) for
#: ``ellm_actions.json``; ``nearby``: materials on the tiles left of and above the player.
ACTION_SITUATIONS = [
    {"front": "grass"},
    {"front": "tree"},
    {"front": "water", "inventory": {"drink": 5}},
    {"front": "stone", "inventory": {"wood_pickaxe": 1}},
    {"front": "iron", "inventory": {"wood_pickaxe": 1, "stone_pickaxe": 1}},
    {"front": "grass", "object": "cow"},
    {"front": "grass", "object": "zombie"},
    {"front": "grass", "object": "ripe plant"},
    {
        "front": "grass",
        "inventory": {"wood": 5, "stone": 5, "coal": 1, "iron": 1, "sapling": 1, "wood_pickaxe": 1, "energy": 5},
        "nearby": ["table", "furnace"],
    },
]
CENTRE, FRONT, NEARBY = (4, 4), (5, 4), [(3, 4), (4, 3)]


def original_outcome(constants, engine, objects, situation: dict, action: str) -> dict:
    """One ``Player.update`` of the original on ``situation``; what changed."""
    world = engine.World((9, 9), constants.materials, (12, 12), 0)
    for x in range(9):
        for y in range(9):
            world[(x, y)] = "grass"
    for pos, material in zip(NEARBY, situation.get("nearby", []), strict=False):
        world[pos] = material
    world[FRONT] = situation["front"]
    player = objects.Player(world, CENTRE)
    world.add(player)
    player.facing = (1, 0)
    player.inventory.update(situation.get("inventory", {}))
    kind = situation.get("object")
    if kind is not None:
        cls = {"cow": objects.Cow, "zombie": objects.Zombie, "ripe plant": objects.Plant}[kind]
        obj = cls(world, FRONT, player) if kind == "zombie" else cls(world, FRONT)
        if kind == "ripe plant":
            obj.grown = 301
        world.add(obj)
    inventory, achievements = dict(player.inventory), dict(player.achievements)
    player.action = action
    success, eval_success = player.update()
    return outcome(world, player, inventory, achievements, success, eval_success)


def outcome(world, player, inventory: dict, achievements: dict, success: bool, eval_success: bool) -> dict:
    """What a step changed, in the terms both implementations share: the success flags, then only what
    differs from the situation before the step (the tile and object in front, inventory and achievement
    increments, position, facing, sleep)."""
    material, obj = world[FRONT]
    changes = {
        "front": material,
        "object_health": None if obj is None else int(obj.health),
        "inventory": {k: v - inventory[k] for k, v in player.inventory.items() if v != inventory[k]},
        "achievements": {k: v - achievements[k] for k, v in player.achievements.items() if v != achievements[k]},
        "pos": [int(p) for p in player.pos],
        "facing": [int(f) for f in player.facing],
        "sleeping": bool(player.sleeping),
    }
    return {"flags": f"{int(success)}{int(eval_success)}", "changes": changes}


def changed(outcomes: dict[str, dict]) -> dict[str, dict]:
    """Each action's changes that differ from ``do nothing``'s (the same step with no game action)."""
    base = outcomes["do nothing"]["changes"]
    return {
        action: diff
        for action, o in outcomes.items()
        if (diff := {k: v for k, v in o["changes"].items() if v != base[k]})
    }


def original_actions(repo: str) -> dict:
    with tempfile.TemporaryDirectory() as where:
        constants, engine, objects = original_text_crafter(repo, Path(where))
        naming = original_action_space(repo, constants)
        harder = naming()
        harder.action_space_type = "harder"
        names = harder.action_names
        played = [harder.get_action_name(harder.unflatten_ac(i)) for i in range(len(names))]
        situations = []
        for situation in ACTION_SITUATIONS:
            outcomes = {a: original_outcome(constants, engine, objects, situation, a) for a in names}
            situations.append(
                {
                    **situation,
                    "flags": [outcomes[a]["flags"] for a in names],
                    "nothing": outcomes["do nothing"]["changes"],
                    "changed": changed(outcomes),
                }
            )
        return {
            "commit": COMMIT,
            "harder": names,
            "harder_played": played,
            "easier": list(constants.actions),
            "good_actions": list(constants.good_actions),
            "situations": situations,
        }


def original_weight_init(repo: str):
    namespace: dict = {}
    source = ast.Module(_functions(_show(repo, "utils.py"), ("weight_init",)), [])
    exec(compile(source, "utils.py", "exec"), {"nn": __import__("torch").nn}, namespace)  # trusted: the original's
    return namespace["weight_init"]


def small_bert():
    """A 2-layer BERT of width 8 (the SBERT's class, ``BertModel``) whose parameters, biases and LayerNorms
    included, are all drawn from N(0, 1) after it is built, standing for pretrained weights; all at
    ``torch.manual_seed(1)``."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=16,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=12,
        max_position_embeddings=10,
    )
    model = BertModel(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_()
    return model


def weight_init_cases(repo: str) -> dict:
    import torch

    model = small_bert()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    torch.manual_seed(0)
    model.apply(original_weight_init(repo))
    cases = [
        {"name": k, "changed": not torch.equal(before[k], v), "values": v.detach().flatten().tolist()}
        for k, v in model.named_parameters()
    ]
    return {"commit": COMMIT, "torch": torch.__version__, "build_seed": 1, "init_seed": 0, "cases": cases}


#: ``ellm_target.json``'s run: the network's sizes, Adam's lr, the sync period and the batch.
TARGET_RUN = {
    "hidden": 8,
    "actions": 5,
    "lr": 1e-3,
    "sync_every": 3,
    "updates": 4,
    "frames_seed": 2,
    "actions_taken": [0, 3, 1, 4],
    "rewards": [1.0, 0.0, 0.5, 0.99],
    "discounts": [0.970299, 0.0, 0.970299, 0.9801],
}


def recipe_weights(named_shapes: list[tuple[str, tuple[int, ...]]]) -> dict:
    """Each parameter from its own generator (seeded by its position): N(0, 1) / sqrt(fan-in) for weights,
    N(0, 0.1) for biases."""
    import math

    import torch

    weights = {}
    for seed, (name, shape) in enumerate(named_shapes):
        draw = torch.randn(shape, generator=torch.Generator().manual_seed(100 + seed))
        weights[name] = draw * (0.1 if len(shape) == 1 else 1 / math.sqrt(math.prod(shape[1:])))
    return weights


def target_batch(run: dict) -> dict:
    """The fixed batch: 4 observations and next observations of 4 stacked 84x84 frames, channels first as the
    original's (``frames_seed``), and the run's actions, n-step rewards and discounts."""
    import torch

    generator = torch.Generator().manual_seed(run["frames_seed"])
    frames = torch.randint(0, 256, (2, 4, 4, 84, 84), generator=generator, dtype=torch.uint8)
    return {
        "obs": frames[0],
        "next_obs": frames[1],
        "action": torch.tensor(run["actions_taken"]),
        "reward": torch.tensor(run["rewards"]),
        "discount": torch.tensor(run["discounts"]),
    }


def original_dqn(repo: str) -> dict:
    """dqn.py's network and agent classes and the utils they use, unchanged, in one namespace."""
    import types

    import numpy as np
    import torch
    import torch.nn.functional as F

    utils = types.SimpleNamespace()
    exec(  # trusted: the pinned original's own functions
        compile(
            ast.Module(_functions(_show(repo, "utils.py"), ("weight_init", "soft_update_params", "to_torch")), []),
            "utils.py",
            "exec",
        ),
        {"nn": torch.nn, "torch": torch},
        utils.__dict__,
    )
    classes = ("ImageEncoder", "Encoder", "Critic", "DQNAgent")
    body = [n for n in ast.parse(_show(repo, "dqn.py")).body if isinstance(n, ast.ClassDef) and n.name in classes]
    namespace: dict = {"torch": torch, "nn": torch.nn, "F": F, "np": np, "utils": utils}
    exec(compile(ast.Module(body, []), "dqn.py", "exec"), namespace)  # trusted: the pinned original's classes
    return namespace


def target_cases(repo: str, run: dict = TARGET_RUN) -> dict:
    import torch

    dqn = original_dqn(repo)
    torch.manual_seed(0)
    agent = dqn["DQNAgent"](
        obs_shape=(4, 84, 84),
        num_actions=run["actions"],
        device="cpu",
        lr=run["lr"],
        critic_target_tau=1.0,
        critic_target_update_every_steps=run["sync_every"],
        train_eps_min=0.01,
        train_eps_max=1,
        train_eps_decay_steps=1_000_000,
        reward_scale=1,
        eval_eps=0.001,
        update_every_steps=1,
        use_tb=True,  # so that update_critic reports critic_loss
        use_wandb=False,
        hidden_dim=run["hidden"],
        use_image=True,
        use_language_state=None,
        use_goal=False,
        vocab=102,
        goal_encoder_type="sbert",
        other_dim=0,
        finetune_settings="train_all",
        other_model_prob=0.5,
        debug=False,
    )
    assert agent.critic_target.encoder is agent.critic.encoder  # the shared encoder, dqn.py:239-243
    shapes = [(k, tuple(v.shape)) for k, v in agent.critic.state_dict().items()]
    weights = recipe_weights(shapes)
    agent.critic.load_state_dict(weights)
    agent.critic_target.load_state_dict(agent.critic.state_dict())
    batch = target_batch(run)
    sample = ({"obs": batch["obs"]}, batch["action"], batch["reward"], batch["discount"], {"obs": batch["next_obs"]})

    def q_values() -> dict:
        with torch.no_grad():
            next_obs = {"obs": batch["next_obs"]}
            return {"target_q": agent.critic_target(next_obs).tolist(), "online_q": agent.critic(next_obs).tolist()}

    steps = [{"step": 0, **q_values()}]
    for step in range(1, run["updates"] + 1):
        metrics = agent.update(iter([tuple(x.clone() if hasattr(x, "clone") else dict(x) for x in sample)]), step)
        steps.append({"step": step, "loss": metrics["critic_loss"], **q_values()})
    return {"commit": COMMIT, "torch": torch.__version__, "run": run, "names": [k for k, _ in shapes], "steps": steps}


#: ``ellm_replay.json``'s stream: each episode's rewards (float16-exact, some outside [-1, 1]); lengths 2, 1, 7,
#: 3 and 12, so that an episode shorter than ``nstep`` and long ones are drawn.
REPLAY_RUN = {
    "episodes": [
        [0.5, 2.0],
        [-1.5],
        [0.25, -3.0, 0.5, 1.5, 0.0, 1.0, 0.75],
        [2.0, 0.5, -0.5],
        [0.0, 0.125, 1.0, 0.0, 0.0, 4.0, -0.25, 0.0, 1.0, 0.5, 0.0, 1.0],
    ],
    "nstep": 3,
    "discount": 0.99,
    "clip_reward": True,
    "seed": 0,
    "draws": 20000,
    "capacity": 12,
}


def observation_id(episode: int, step: int) -> int:
    """The scripted stream's observation after ``step`` steps of ``episode`` (fits a uint8 frame)."""
    return 20 * episode + step


def original_replay(repo: str) -> dict:
    """replay_buffer.py's helpers and classes, unchanged, in one namespace with the modules it imports."""
    import datetime
    import io
    import traceback
    from collections import defaultdict

    import numpy as np
    import torch
    from torch.utils.data import IterableDataset

    wanted = ("episode_len", "save_episode", "load_episode", "ReplayBufferStorage", "ReplayBuffer")
    body = [
        n
        for n in ast.parse(_show(repo, "replay_buffer.py")).body
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name in wanted
    ]
    namespace: dict = {
        "np": np,
        "torch": torch,
        "IterableDataset": IterableDataset,
        "datetime": datetime,
        "io": io,
        "traceback": traceback,
        "defaultdict": defaultdict,
    }
    exec(compile(ast.Module(body, []), "replay_buffer.py", "exec"), namespace)  # trusted: the pinned original's
    return namespace


def _spec(name: str, shape: tuple[int, ...], dtype) -> object:
    """What the storage reads of a ``dm_env`` spec."""
    from types import SimpleNamespace

    return SimpleNamespace(name=name, shape=shape, dtype=dtype)


def store_replay_episode(storage, episode: int, rewards: list[float]) -> None:
    """One episode into the original's storage as its train loop adds it (train.py:338-350): the reset's time
    step (action 0, reward 0, discount 1), then one per step, the last with discount 0."""
    from types import SimpleNamespace

    import numpy as np

    def time_step(step: int, action: int, reward: float, discount: int):
        observation = {"obs": np.array([[observation_id(episode, step)]], np.int32)}
        return SimpleNamespace(observation=observation, action=action, reward=reward, discount=discount)

    storage.add(time_step(0, 0, 0.0, 1))
    for step, reward in enumerate(rewards, start=1):
        storage.add(time_step(step, step % 5, reward, 0 if step == len(rewards) else 1))
    storage.store_episode()


def replay_cases(repo: str, run: dict = REPLAY_RUN) -> dict:
    import numpy as np

    replay = original_replay(repo)
    specs = (
        {"obs": _spec("obs", (1, 1), np.int32)},
        _spec("action", (), np.int64),
        _spec("reward", (), np.float16),
        _spec("discount", (), np.uint8),
    )

    def buffer(where: Path, max_size: int):
        return replay["ReplayBuffer"](
            where, max_size, 1, run["nstep"], run["discount"], run["clip_reward"], 1, True, 1
        )  # one worker, a fetch before each sample, files kept, no frame stack

    def held(sampler) -> list[int]:
        return [int(fn.stem.split("_")[1]) for fn in sampler._episode_fns]

    with tempfile.TemporaryDirectory() as where:
        storage = replay["ReplayBufferStorage"](None, specs, Path(where) / "all")
        for episode, rewards in enumerate(run["episodes"]):
            store_replay_episode(storage, episode, rewards)
        sampler = buffer(Path(where) / "all", 10_000)
        np.random.seed(run["seed"])
        drawn: dict[tuple[int, int], dict] = {}
        for _ in range(run["draws"]):
            obs, action, reward, discount, next_obs = sampler._sample()
            episode, start = divmod(int(obs["obs"].item()), 20)
            case = {
                "episode": episode,
                "start": start,
                "action": int(action),
                "reward": float(reward),
                "reward_dtype": str(reward.dtype),
                "discount": float(discount),
                "next_step": int(next_obs["obs"].item()) % 20,
            }
            seen = drawn.setdefault((episode, start), {**case, "count": 0})
            assert {k: seen[k] for k in case} == case  # the same pair gives the same sample
            seen["count"] += 1
        assert held(sampler) == list(range(len(run["episodes"])))  # stored in order (file names sort by time)

        storage = replay["ReplayBufferStorage"](None, specs, Path(where) / "capacity")
        sampler = buffer(Path(where) / "capacity", run["capacity"])
        capacity = []
        for episode, rewards in enumerate(run["episodes"]):
            store_replay_episode(storage, episode, rewards)
            sampler._sample()  # fetches the new episode, evicting the oldest ones to fit
            capacity.append(held(sampler))
    return {
        "commit": COMMIT,
        "run": run,
        "samples": [drawn[k] for k in sorted(drawn)],
        "capacity": capacity,
    }


def main(repo: str) -> None:
    parse = parse_response_of_original(repo)
    parsed = []
    for answer in ANSWERS:
        try:
            goals = sorted(set(parse(None, answer)))
        except ValueError:
            goals = None
        parsed.append({"answer": answer, "goals": goals})
    OUT.joinpath("ellm_parser.json").write_text(json.dumps({"commit": COMMIT, "cases": parsed}, indent=1) + "\n")
    cases = [{"score": s, "threshold": t, "rewarded": text_reward(s, t)} for s, t in PAIRS]
    OUT.joinpath("ellm_threshold.json").write_text(json.dumps({"commit": COMMIT, "cases": cases}, indent=1) + "\n")
    from transformers import AutoTokenizer

    from textagents.sb3.features import offline_sbert_path

    tokenizer = AutoTokenizer.from_pretrained(str(offline_sbert_path()))
    joint = [
        {"view": v, "inventory": i, "status": s, "goals": g, "ids": original_joined_ids(tokenizer, v, i, s, g)}
        for v, i, s, g in JOINT_CASES
    ]
    OUT.joinpath("ellm_joint.json").write_text(json.dumps({"commit": COMMIT, "cases": joint}) + "\n")
    health = [
        {"health": h, "last_health": last, "dying": d, "reward": health_reward(h, last, d)}
        for h, last, d in HEALTH_CASES
    ]
    OUT.joinpath("ellm_health.json").write_text(json.dumps({"commit": COMMIT, "cases": health}, indent=1) + "\n")
    OUT.joinpath("ellm_actions.json").write_text(json.dumps(original_actions(repo)) + "\n")
    OUT.joinpath("ellm_weight_init.json").write_text(json.dumps(weight_init_cases(repo)) + "\n")
    OUT.joinpath("ellm_target.json").write_text(json.dumps(target_cases(repo), indent=1) + "\n")
    OUT.joinpath("ellm_replay.json").write_text(json.dumps(replay_cases(repo), indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
