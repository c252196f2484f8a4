"""LLM-Personalize's planner prompt (``context.single`` of ``igib_v2_nav_sp.yaml``, as its fine-tuning
pairs show it), around the ``llm_personalize`` text observation."""

from __future__ import annotations

SYSTEM_PROMPT = "You are a one-handed household robot."
OPTIONS = (
    "go to room, go to object, go to receptacle, look at object, look at receptacle, pick up object, "
    "place object on receptacle"
)
EXAMPLES = (
    "\nExample steps to explore room living room 0:\nstep 1: go to living room 0"
    "\nExample steps to pick up saucer 1 and place on kitchen 0 counter 18:\nstep 1: go to saucer 1"
    "\nstep 2: look at saurcer 1\nstep 3: pick up saucer 1\nstep 4: go to kitchen 0 counter 18"
    "\nstep 5: look at kitchen 0 counter 18\nstep 6: place saurcer 1 on kitchen 0 counter 18\n"
)  # "saurcer" is the paper's typo, kept so prompts match its fine-tuning data
BASE_PROMPT = (
    "There are objects misplaced on wrong receptacles and potentially in the wrong room. context_placeholder. "
    "\nGive me the next steps to explore the house and place misplaced objects on correct receptacles. "
    "Use the following actions for each step and separate by new lines: option_placeholder. prev_steps_msg. "
    "example_placeholder. The next steps should only follow one of the above examples. If complete, print "
    "mission complete as the next step. Steps: "
)
FIRST_STEP = "\nstep 1: "


def planner_prompt(context: str, previous_steps: str = "", first_step: bool = True) -> str:
    """The user message LLM-Personalize's planner receives for a ``llm_personalize`` observation.

    ``first_step``: end with ``\nstep 1: `` as the imitation pairs do (the self-training pairs do not).
    """
    prompt = (
        BASE_PROMPT.replace("context_placeholder", "\n" + context)
        .replace("option_placeholder", OPTIONS)
        .replace("prev_steps_msg", previous_steps)
        .replace("example_placeholder", EXAMPLES)
    )
    return prompt + FIRST_STEP if first_step else prompt


def chat_messages(context: str, plan: str, first_step: bool = True) -> list[dict[str, str]]:
    """One fine-tuning pair in OpenAI chat format, as in LLM-Personalize's ``*_pairs_*.jsonl``."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": planner_prompt(context, first_step=first_step)},
        {"role": "assistant", "content": plan},
    ]
