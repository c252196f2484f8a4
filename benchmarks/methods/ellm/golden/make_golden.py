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

    python benchmarks/methods/ellm/golden/make_golden.py /work/.mirror/yuqingd+ellm/repo
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
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


if __name__ == "__main__":
    main(sys.argv[1])
