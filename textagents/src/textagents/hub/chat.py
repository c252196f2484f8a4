"""An episode as a chat, and the tokens a chat template puts between its turns.

``EpisodeChat`` writes the messages: a system message, an optional worked example (a demonstration: user and
assistant turns of another episode), a first user message with the goal, the observation
and the commands, then one user message per later observation (the env's feedback, the observation, the
commands again only when they changed); each user message ends with ``ASK``. ``ChatTokens`` turns them into
token ids the way a multi-turn rollout needs them: the prompt once, then after each generated turn only the
segment the template adds (the end of the assistant turn, the next user message, the start of the next
assistant turn). The model is always
conditioned on exactly the ids it generated, never on a re-tokenized transcript.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from textagents.agents.prompts import mission_of, text_of

#: SmolLM2-135M's sampled first turns on BabyAI-Text-GoToObjS4 named a command 4-6 times in 32 with this wording
#: (a longer instruction without the example: 0 in 32), 19 in 32 with a two-turn demonstration as well.
SYSTEM_PROMPT = "You control an agent in a text game. Reply with one command only, for example: go forward"
ASK = "Your command:"

_PROBE_ASSISTANT = "PROBE-ASSISTANT-TURN"
_PROBE_USER = "PROBE-USER-TURN"

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class ChatStyle:
    """The ``system`` message and a ``demonstration``: user/assistant messages (starting with a user message,
    ending with an assistant message) put before each episode's first user message as a worked example."""

    system: str = SYSTEM_PROMPT
    demonstration: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        roles = [role for role, _ in self.demonstration]
        expected = ["user", "assistant"] * (len(roles) // 2)
        if roles != expected:
            raise ValueError(f"a demonstration alternates user and assistant messages, ending with one; got {roles}")


class EpisodeChat:
    """The messages of one episode: ``first(obs, info)`` at reset, ``next(obs, info)`` after each step."""

    def __init__(self, style: ChatStyle | None = None):
        self.style = style or ChatStyle()
        self._commands: list[str] = []

    def first(self, obs: Any, info: dict[str, Any]) -> Messages:
        self._commands = list(info.get("admissible_commands") or [])
        lines = [f"Goal: {mission_of(obs)}"] if mission_of(obs) else []
        lines += [text_of(obs), f"Commands: {', '.join(self._commands)}", ASK]
        demonstration = [{"role": role, "content": content} for role, content in self.style.demonstration]
        return [
            {"role": "system", "content": self.style.system},
            *demonstration,
            {"role": "user", "content": "\n".join(lines)},
        ]

    def next(self, obs: Any, info: dict[str, Any]) -> str:
        """The user message's content after a step."""
        lines = [info["feedback"]] if info.get("feedback") else []
        lines.append(text_of(obs))
        commands = list(info.get("admissible_commands") or [])
        if commands != self._commands:
            self._commands = commands
            lines.append(f"Commands: {', '.join(commands)}")
        lines.append(ASK)
        return "\n".join(lines)


class ChatTokens:
    """Token ids of a multi-turn chat under ``tokenizer``'s chat template.

    The template must be prefix-preserving (rendering more messages only appends text), which is checked
    once here with probe messages; a template that is not raises ``ValueError``.
    """

    def __init__(self, tokenizer: Any):
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template; multi-turn rollouts render turns with it")
        self.tokenizer = tokenizer
        opening = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
        answer = {"role": "assistant", "content": _PROBE_ASSISTANT}
        opened = self.render(opening, generation_prompt=True)
        answered = self.render([*opening, answer])
        followed = self.render([*opening, answer, {"role": "user", "content": _PROBE_USER}], generation_prompt=True)
        if not (answered.startswith(opened) and followed.startswith(answered) and _PROBE_USER in followed):
            raise ValueError(
                "the tokenizer's chat template is not prefix-preserving (rendering a later turn changes earlier "
                "text), so a multi-turn episode cannot be one prompt + completion"
            )
        #: Text the template writes after an assistant message's content (e.g. ``<|im_end|>\n``).
        self.assistant_close = answered[len(opened) :].split(_PROBE_ASSISTANT, 1)[1]
        #: Text around a later user message's content, up to and including the next assistant prompt.
        self.user_open, self.user_close = followed[len(answered) :].split(_PROBE_USER, 1)
        eos = tokenizer.eos_token_id
        self.eos_ids: set[int] = set(eos) if isinstance(eos, list) else {eos} if eos is not None else set()

    def render(self, messages: Sequence[dict[str, str]], generation_prompt: bool = False) -> str:
        return self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generation_prompt
        )

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: Sequence[dict[str, str]]) -> list[int]:
        """The conversation so far, ending with the prompt of the assistant's turn."""
        return self.encode(self.render(messages, generation_prompt=True))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def next_turn_ids(self, generated: Sequence[int], user_text: str) -> list[int]:
        """The ids after a generated assistant turn: its closing (less an end-of-turn token the model already
        generated), a user message with ``user_text``, and the prompt of the next assistant turn."""
        close = self.assistant_close
        if generated and generated[-1] in self.eos_ids:
            eos_text = self.tokenizer.decode([generated[-1]], skip_special_tokens=False)
            close = close.removeprefix(eos_text)
        return self.encode(close + self.user_open + user_text + self.user_close)
