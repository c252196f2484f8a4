"""Golden outputs of ELLM's original code (yuqingd/ellm @ e068cf464d3808aa7ba97f4dcf9667b1721c9b43) for
tests/textagents/methods/test_ellm.py. Not imported by the package.

- ``ellm_parser.json``: ``BulletPrompt.parse_response`` (text_crafter/lm.py:76-91), taken out of the file at
  that commit with ``ast`` and run unchanged on fixed answers; ``None`` where it raises ``ValueError`` (the
  caller, ``GPTLanguageModel.predict_options`` lm.py:381-395, then returns no goal and caches nothing), and
  the caller's de-duplication (lm.py:397, ``list(set(...))``) applied as a sorted list since a set has no order.
- ``ellm_threshold.json``: the reward test of ``CrafterLMGoalWrapper.text_reward``
  (text_crafter/text_crafter/goal_wrapper.py:302-308), transcribed in ``text_reward`` below because the
  method needs the sentence encoder: a suggestion pays when ``cos_score > self.threshold``.

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
    exec(compile(ast.Module([method], []), "lm.py", "exec"), namespace)
    return namespace["parse_response"]


def text_reward(cos_score: float, threshold: float) -> bool:
    """goal_wrapper.py:304: ``if cos_score > self.threshold:``."""
    return cos_score > threshold


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


if __name__ == "__main__":
    main(sys.argv[1])
