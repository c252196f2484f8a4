"""BK-Code's labelling stage: the LLM writes a potential function, which is checked, run in the sandbox on
sample observations, and sent back with the error or the values it gave, for a few rounds (the original's
``label_code.py`` loop, on text observations: ``potential(observation: str) -> float``). The last code
that ran without error is kept; every answer is in the run's recorded LLM calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textagents.llm.base import LLMBackend
from textagents.methods.bk.sandbox import ALLOWED_IMPORTS, SandboxedPotential, UnsafeCodeError, check_code

#: The original's system prompt (``prompts/coding/system_task_description.txt``).
SYSTEM_TASK = (
    "You are a reward engineer trying to write reward functions to solve reinforcement learning tasks as "
    "effectively as possible. \nI will give you information about the environment. Your goal is to write a "
    "reward function that can measure the background knowledge of agent behaviors in this environment. For "
    "instance, when the agent behaviors match your background knowledge of the environment, the reward "
    "function should give a high reward. Otherwise, the reward function should give a low reward. You will "
    "NOT know the specific task goals when designing this reward function. Try to make it general for "
    "different tasks and correspond to your understanding of the environment. \nYou will write the reward "
    "function with Python code. You can define intermediate variables and helper functions."
)
#: What the agent sees, per env family (ours: the original described minigrid's numeric grid).
ENVIRONMENTS = {
    "babyai_text": (
        "The environment is BabyAI, a grid world seen from the agent's point of view. Each observation is "
        "text: one line per thing the agent sees, such as 'You see a red ball 2 steps forward' or 'You see a "
        "wall 1 step left', and lines such as 'You carry a blue key'. The agent turns left or right, goes "
        "forward, picks up, drops and toggles (opens doors). Missions ask it to go to, pick up, put next to "
        "or open objects (balls, boxes, keys, doors) of six colours."
    ),
    "crafter_text": (
        "The environment is Crafter, a 2D survival game. Each observation is text: what the player sees and "
        "targets, its inventory and its status (hungry, thirsty, sleepy). The player collects wood, stone, "
        "coal, iron and diamonds, makes tools at a table, drinks water, eats, sleeps and fights zombies."
    ),
}
INITIAL = (
    "Write a reward function to compute the reward that represents background knowledge of these tasks. You "
    "should wrap your reward function in a Markdown Python code block. The reward function signature is:\n\n"
    "```python\ndef potential(observation: str) -> float:\n"
    '    """The reward of the current observation (text, as described above)."""\n    return 0.0\n```\n\n'
    f"You may import only these modules: {', '.join(sorted(ALLOWED_IMPORTS))}."
)
#: The original's feedback prompts (``user_error_feedback.txt``, ``user_improve.txt``).
ERROR_FEEDBACK = (
    "Executing the reward function code above has the following error: \n{error} \n\n"
    "Please fix the bug and provide a new, improved reward function!\n"
)
IMPROVE = (
    "Here are evaluations based on the given reward function.\n{examples}\n\n"
    "Please carefully analyze the feedback and provide a new, improved reward function that can better "
    "represent background knowledge based on given cases.\n\nYou should (a) explain how the reward function "
    "can be improved based on provided examples, and (b) provide the new reward function in the correct "
    "format.\n"
)
_CODE_BLOCK = re.compile(r"```python\n(.*)```", re.DOTALL)


def extract_code(answer: str) -> str | None:
    """The answer's Python code block (the original's regular expression), or None."""
    match = _CODE_BLOCK.search(answer)
    return match.group(1) if match else None


@dataclass
class CodeLabelling:
    """The kept code (None when no round produced code that ran) and what happened in each round."""

    code: str | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)


def write_potential(
    backend: LLMBackend,
    family: str,
    samples: Sequence[str],
    *,
    rounds: int = 3,
    sampling: dict[str, Any] | None = None,
) -> CodeLabelling:
    """Ask for a potential function, try it on ``samples`` in the sandbox, feed back, ``rounds`` times."""
    if family not in ENVIRONMENTS:
        raise ValueError(f"no environment description for {family!r}; known: {sorted(ENVIRONMENTS)}")
    messages = [
        {"role": "system", "content": SYSTEM_TASK},
        {"role": "system", "content": ENVIRONMENTS[family]},
        {"role": "user", "content": INITIAL},
    ]
    result = CodeLabelling()
    for _ in range(rounds):
        answer = backend.chat(messages, **(sampling or {"max_tokens": 512, "temperature": 0.0}))
        messages.append({"role": "assistant", "content": answer})
        code = extract_code(answer)
        error = None
        if code is None:
            error = "no ```python code block in the answer"
        else:
            try:
                check_code(code)
            except UnsafeCodeError as refused:
                error = f"refused before running: {refused}"
        values: list[float] = []
        if error is None:
            with SandboxedPotential(code) as potential:
                values = [potential.phi(sample) for sample in samples]
                if potential.stats.failures:
                    error = potential.stats.last_error
        result.rounds.append({"answer_chars": len(answer), "code": code is not None, "error": error, "values": values})
        if error is not None:
            messages.append({"role": "user", "content": ERROR_FEEDBACK.format(error=error)})
            continue
        result.code = code
        examples = "\n".join(
            f"Sample#{i + 1}\n{sample}\nThe computed reward is {value:.4f}."
            for i, (sample, value) in enumerate(zip(samples, values, strict=True))
        )
        messages.append({"role": "user", "content": IMPROVE.format(examples=examples)})
    return result
