"""Multi-turn episodes played by a token generator, each laid out as one prompt + one completion.

``play_episodes`` resets one env per ``EpisodeSpec``, then turn by turn asks the generator for the next
assistant turn of every unfinished episode at once (a batch), parses each turn into a command and steps its
env. The completion holds the model's tokens (``env_mask`` 1) and, between turns, the tokens of the env's
answer as the chat template writes them (``env_mask`` 0), so a trainer can score the model's tokens only.

Model output is untrusted data: a turn is matched against the admissible commands (an exact match or the
longest admissible command the turn contains, ``textagents.agents.parsing``); a turn naming none goes to the
env as it is (its first line, other characters than printable ASCII shown as ``?``, at most
``MAX_INVALID_CHARS``). The env judges it: an alias it knows is played, anything else is an invalid no-op
that costs a step and says what is valid. Nothing is ever executed.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import gymnasium as gym

from textagents.agents.motion import make_for_llm
from textagents.agents.parsing import parse_command
from textagents.hub.chat import SYSTEM_PROMPT, ChatStyle, ChatTokens, EpisodeChat, Messages

#: Longest text of an unparsable turn passed on to the env (it comes back in the env's feedback).
MAX_INVALID_CHARS = 80
_PRINTABLE = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")
#: Match kinds of ``parse_command`` taken as naming a command (no fuzzy matches, no fallbacks).
ACCEPTED_MATCHES = ("exact", "contained")


class TokenGenerator(Protocol):
    """Given token sequences, the next assistant turn of each: new token ids, ending with an end-of-turn
    token unless ``max_new_tokens`` ran out first."""

    max_new_tokens: int

    def __call__(self, sequences: list[list[int]]) -> list[list[int]]: ...


@dataclass(frozen=True)
class EpisodeSpec:
    """Which episode: the env id and the reset seed."""

    env_id: str
    seed: int


@dataclass
class EpisodeRollout:
    """One played episode: its token layout and outcome.

    ``outputs`` are the model's turns as text, ``commands`` what each sent to the env (the admissible command
    it named, else ``invalid_text`` of it). ``invalid_actions`` counts the steps the env reported as
    invalid, ``ended`` whether the env ended the episode (terminated or truncated) rather than the turn or
    token budget.
    """

    spec: EpisodeSpec
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    episode_return: float = 0.0
    success: bool = False
    invalid_actions: int = 0
    ended: bool = False

    @property
    def turns(self) -> int:
        return len(self.outputs)

    @property
    def valid_fraction(self) -> float:
        """Share of the turns the env accepted as a command (0 for an episode with no turn)."""
        return (self.turns - self.invalid_actions) / self.turns if self.turns else 0.0


def parse_turn(output: str, admissible: Sequence[str]) -> str | None:
    """The admissible command a model turn names, or ``None`` when it names none."""
    if not admissible:
        return None
    parsed = parse_command(output, admissible)
    return parsed.command if parsed.kind in ACCEPTED_MATCHES else None


def invalid_text(output: str) -> str:
    """What the env gets for a turn that named no command: its first line, bounded, with every character
    but printable ASCII replaced by ``?`` (so that dropping look-alike letters cannot make up a command)."""
    lines = output.strip().splitlines()
    first = lines[0][:MAX_INVALID_CHARS] if lines else ""
    return "".join(c if c in _PRINTABLE else "?" for c in first)


class EnvPool:
    """Envs kept between calls, so a trainer does not rebuild one per episode (``env_kwargs`` go to
    ``gym.make``; continuous-control envs get text commands, ``make_for_llm``)."""

    def __init__(self, **env_kwargs: Any):
        self.env_kwargs = env_kwargs
        self._envs: dict[str, list[gym.Env]] = {}

    def take(self, env_id: str, count: int) -> list[gym.Env]:
        envs = self._envs.setdefault(env_id, [])
        while len(envs) < count:
            envs.append(make_for_llm(env_id, **self.env_kwargs))
        return envs[:count]

    def close(self) -> None:
        for envs in self._envs.values():
            for env in envs:
                env.close()
        self._envs.clear()


def first_messages(env: gym.Env, spec: EpisodeSpec, style: ChatStyle | None = None) -> Messages:
    """The messages that open episode ``spec`` (resets ``env`` with its seed)."""
    obs, info = env.reset(seed=spec.seed)
    return EpisodeChat(style).first(obs, info)


def expert_demonstration(env_id: str, seed: int, turns: int = 2, system: str = SYSTEM_PROMPT) -> ChatStyle:
    """A ``ChatStyle`` whose demonstration is the env's expert playing the first ``turns`` steps of episode
    ``seed`` (pick a seed the training and evaluation episodes do not use)."""
    env = make_for_llm(env_id)
    obs, info = env.reset(seed=seed)
    expert = env.unwrapped.expert()
    expert.reset(obs, info)
    chat = EpisodeChat()
    messages = [("user", chat.first(obs, info)[-1]["content"])]
    for _ in range(turns):
        command = expert.act(obs, info)
        messages.append(("assistant", command))
        obs, _, terminated, truncated, info = env.step(command)
        if terminated or truncated or len(messages) == 2 * turns:
            break
        messages.append(("user", chat.next(obs, info)))
    env.close()
    return ChatStyle(system, tuple(messages))


@dataclass
class _Playing:
    rollout: EpisodeRollout
    env: gym.Env
    chat: EpisodeChat
    info: dict[str, Any]
    done: bool = False


def play_episodes(
    specs: Sequence[EpisodeSpec],
    generate: TokenGenerator,
    tokens: ChatTokens,
    max_turns: int,
    max_completion_tokens: int | None = None,
    pool: EnvPool | None = None,
    style: ChatStyle | None = None,
    prompts: Sequence[Messages] | None = None,
) -> list[EpisodeRollout]:
    """Play one episode per spec, all turns of a round in one ``generate`` call.

    An episode ends when its env ends it, after ``max_turns`` turns, or when one more turn could take its
    completion past ``max_completion_tokens``. ``prompts``, when given, are the messages the caller
    expects each episode to open with (a trainer's dataset rows); a mismatch raises ``ValueError``.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be >= 1, got {max_turns}")
    if prompts is not None and len(prompts) != len(specs):
        raise ValueError(f"{len(prompts)} prompts for {len(specs)} episodes")
    pool = pool if pool is not None else EnvPool()
    playing: list[_Playing] = []
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec.env_id] = counts.get(spec.env_id, 0) + 1
    envs = {env_id: iter(pool.take(env_id, count)) for env_id, count in counts.items()}
    for index, spec in enumerate(specs):
        env = next(envs[spec.env_id])
        chat = EpisodeChat(style)
        obs, info = env.reset(seed=spec.seed)
        messages = chat.first(obs, info)
        if prompts is not None and list(prompts[index]) != messages:
            raise ValueError(
                f"episode {spec} opens with {messages!r}, not with the prompt given for it {prompts[index]!r}: "
                "the dataset was built with another env version or chat style"
            )
        playing.append(_Playing(EpisodeRollout(spec, tokens.prompt_ids(messages)), env, chat, info))
    for turn in range(max_turns):
        active = [p for p in playing if not p.done]
        if not active:
            break
        generated = generate([p.rollout.prompt_ids + p.rollout.completion_ids for p in active])
        for episode, new_ids in zip(active, generated, strict=True):
            _step(
                episode,
                list(new_ids),
                tokens,
                last_turn=turn == max_turns - 1,
                budget=max_completion_tokens,
                turn_tokens=generate.max_new_tokens,
            )
    return [p.rollout for p in playing]


def _step(
    episode: _Playing, new_ids: list[int], tokens: ChatTokens, last_turn: bool, budget: int | None, turn_tokens: int
) -> None:
    rollout = episode.rollout
    rollout.completion_ids += new_ids
    rollout.env_mask += [1] * len(new_ids)
    output = tokens.decode(new_ids)
    command = parse_turn(output, episode.info.get("admissible_commands") or [])
    sent = command if command is not None else invalid_text(output)
    rollout.outputs.append(output)
    rollout.commands.append(sent)
    obs, reward, terminated, truncated, info = episode.env.step(sent)
    episode.info = info
    rollout.episode_return += float(reward)
    rollout.invalid_actions += bool(info.get("invalid_action"))
    rollout.success = bool(info.get("success"))
    rollout.ended = bool(terminated or truncated)
    if rollout.ended or last_turn:
        episode.done = True
        return
    answer = tokens.next_turn_ids(new_ids, episode.chat.next(obs, info))
    if budget is not None and len(rollout.completion_ids) + len(answer) + turn_tokens > budget:
        episode.done = True
        return
    rollout.completion_ids += answer
    rollout.env_mask += [0] * len(answer)
