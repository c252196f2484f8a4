"""The multi-turn rollout glue on scripted turns: a correct command sequence earns the env's reward,
garbage is an invalid no-op with no reward (never a crash), and the token layout is what the chat template
renders with the model's tokens masked 1 and the env's 0."""

from __future__ import annotations

import gymnasium as gym
import pytest

import textenvs  # noqa: F401  (registers the ids)
from textagents.hub.chat import ChatStyle, ChatTokens, EpisodeChat
from textagents.hub.grpo import (
    TextEnvRolloutFunc,
    episode_dataset,
    episode_return_reward,
    rollout_output,
    success_reward,
    valid_command_reward,
)
from textagents.hub.rollout import (
    MAX_INVALID_CHARS,
    EpisodeSpec,
    expert_demonstration,
    invalid_text,
    parse_turn,
    play_episodes,
)
from textagents.testing import ENV_VOCABULARY, train_tokenizer

ENV_ID = "BabyAI-Text-GoToObjS4-v0"
# ChatML-like: the end-of-turn token is part of the template, as in SmolLM2's.
TEMPLATE = (
    "{% for m in messages %}<pad>{{ m['role'] }}\n{{ m['content'] }}<eos>\n{% endfor %}"
    "{% if add_generation_prompt %}<pad>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    tokenizer = train_tokenizer(ENV_VOCABULARY)
    tokenizer.chat_template = TEMPLATE
    return tokenizer


@pytest.fixture(scope="module")
def tokens(tokenizer):
    return ChatTokens(tokenizer)


class ScriptedGenerator:
    """Answers each episode's turns from its script (looked up by the episode's prompt ids), each turn
    ending with the end-of-turn token; ``calls`` records the batch sizes."""

    def __init__(self, tokenizer, scripts: dict[tuple[int, ...], list[str]], max_new_tokens: int = 64):
        self.tokenizer = tokenizer
        self.scripts = {prompt: list(turns) for prompt, turns in scripts.items()}
        self.max_new_tokens = max_new_tokens
        self.calls: list[int] = []

    def __call__(self, sequences):
        self.calls.append(len(sequences))
        answers = []
        for sequence in sequences:
            prompt = next(p for p in self.scripts if tuple(sequence[: len(p)]) == p)
            text = self.scripts[prompt].pop(0)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][: self.max_new_tokens - 1]
            answers.append([*ids, self.tokenizer.eos_token_id])
        return answers


def expert_commands(seed: int) -> tuple[list[str], float]:
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=seed)
    expert = env.unwrapped.expert()
    expert.reset(obs, info)
    commands, total, done = [], 0.0, False
    while not done:
        commands.append(expert.act(obs, info))
        obs, reward, terminated, truncated, info = env.step(commands[-1])
        total += float(reward)
        done = terminated or truncated
    return commands, total


def prompt_key(tokens: ChatTokens, spec: EpisodeSpec) -> tuple[int, ...]:
    env = gym.make(spec.env_id)
    obs, info = env.reset(seed=spec.seed)
    return tuple(tokens.prompt_ids(EpisodeChat().first(obs, info)))


def test_expert_command_sequence_gets_the_env_reward(tokenizer, tokens):
    specs = [EpisodeSpec(ENV_ID, seed) for seed in range(3)]
    scripts, expected = {}, []
    for spec in specs:
        commands, total = expert_commands(spec.seed)
        # Decorated turns as a chat model writes them still name the command.
        scripts[prompt_key(tokens, spec)] = [f"Action: {c}." if i % 2 else c for i, c in enumerate(commands)]
        expected.append((commands, total))
    generator = ScriptedGenerator(tokenizer, scripts)
    rollouts = play_episodes(specs, generator, tokens, max_turns=10)
    for rollout, (commands, total) in zip(rollouts, expected, strict=True):
        assert rollout.commands == commands
        assert rollout.success and rollout.ended
        assert rollout.episode_return == pytest.approx(total) and total > 0.5
        assert (rollout.invalid_actions, rollout.valid_fraction, rollout.turns) == (0, 1.0, len(commands))
    # One generate call per round for all unfinished episodes.
    assert generator.calls[0] == 3 and sum(generator.calls) == sum(len(c) for c, _ in expected)
    fields = rollout_output(rollouts)
    assert episode_return_reward([], **fields) == pytest.approx([t for _, t in expected])
    assert success_reward([], **fields) == [1.0, 1.0, 1.0]
    assert valid_command_reward([], **fields) == [1.0, 1.0, 1.0]


GARBAGE = [
    "",
    "\x00\x01\x02 \u202e\ufffd",
    "import os; os.system('rm -rf /')",
    'Ignore the game. {"command": null}',
    "forward go left turn " * 500,
    "\u0433\u043e forward",  # Cyrillic look-alike of "go"
]


def test_garbage_turns_are_invalid_with_no_reward_and_no_crash(tokenizer, tokens):
    spec = EpisodeSpec(ENV_ID, 0)
    generator = ScriptedGenerator(tokenizer, {prompt_key(tokens, spec): list(GARBAGE)}, max_new_tokens=4096)
    [rollout] = play_episodes([spec], generator, tokens, max_turns=len(GARBAGE))
    assert rollout.commands == [invalid_text(g) for g in GARBAGE]
    assert rollout.commands[-1] == "?? forward"  # not "forward", an alias the env would play
    assert rollout.invalid_actions == rollout.turns == len(GARBAGE)
    assert (rollout.episode_return, rollout.success, rollout.valid_fraction) == (0.0, False, 0.0)
    fields = rollout_output([rollout])
    assert episode_return_reward([], **fields) == [0.0] and valid_command_reward([], **fields) == [0.0]


def test_parse_turn_takes_exact_or_contained_commands_only():
    commands = ["turn left", "turn right", "go forward"]
    assert parse_turn("  Go Forward.\n", commands) == "go forward"
    assert parse_turn("I will turn left now", commands) == "turn left"
    assert parse_turn("trun lft", commands) is None  # a fuzzy match is not a command
    assert parse_turn("go forward", []) is None
    assert invalid_text("bad\u00e9 cmd\tx\nsecond line") == "bad? cmd?x"
    assert len(invalid_text("x" * 1000)) == MAX_INVALID_CHARS


def test_token_layout_matches_the_chat_template_and_masks_env_tokens(tokenizer, tokens):
    spec = EpisodeSpec(ENV_ID, 0)
    commands, _ = expert_commands(0)
    turns = ["turn left", "jump", *commands]
    generator = ScriptedGenerator(tokenizer, {prompt_key(tokens, spec): list(turns)})
    [rollout] = play_episodes([spec], generator, tokens, max_turns=len(turns))
    # The transcript the template renders for the same conversation, tokens and all.
    env = gym.make(ENV_ID)
    chat = EpisodeChat()
    obs, info = env.reset(seed=0)
    messages = chat.first(obs, info)
    for turn in turns[:-1]:
        obs, _, _, _, info = env.step(turn)
        messages += [{"role": "assistant", "content": turn}, {"role": "user", "content": chat.next(obs, info)}]
    messages.append({"role": "assistant", "content": turns[-1]})
    rendered = tokens.render(messages)
    assert tokenizer.decode(rollout.prompt_ids + rollout.completion_ids) == rendered.removesuffix("\n")
    assert len(rollout.env_mask) == len(rollout.completion_ids)
    model_ids = [t for t, m in zip(rollout.completion_ids, rollout.env_mask, strict=True) if m]
    assert tokenizer.decode(model_ids) == "<eos>".join(turns) + "<eos>"
    assert "'jump' is not a valid command" in tokenizer.decode(rollout.completion_ids)


def test_completion_budget_and_turn_limit_end_episodes(tokenizer, tokens):
    spec = EpisodeSpec(ENV_ID, 0)
    key = prompt_key(tokens, spec)
    [limited] = play_episodes([spec], ScriptedGenerator(tokenizer, {key: ["turn left"] * 9}), tokens, max_turns=3)
    assert (limited.turns, limited.ended) == (3, False)
    generator = ScriptedGenerator(tokenizer, {key: ["turn left"] * 9}, max_new_tokens=8)
    [short] = play_episodes([spec], generator, tokens, max_turns=9, max_completion_tokens=60)
    assert 1 <= short.turns < 9 and len(short.completion_ids) <= 60


def test_prompts_must_match_the_episodes(tokenizer, tokens):
    rows = episode_dataset(ENV_ID, [0, 1])
    generator = ScriptedGenerator(tokenizer, {})
    with pytest.raises(ValueError, match="not with the prompt given"):
        play_episodes([EpisodeSpec(ENV_ID, 1)], generator, tokens, max_turns=1, prompts=[rows[0]["prompt"]])
    with pytest.raises(ValueError, match="max_turns"):
        play_episodes([EpisodeSpec(ENV_ID, 0)], generator, tokens, max_turns=0)
    with pytest.raises(ValueError, match="Unknown environment id 'BabyAI-Text-Nope-v0'"):
        play_episodes([EpisodeSpec("BabyAI-Text-Nope-v0", 0)], generator, tokens, max_turns=1)


def test_dataset_rows_map_back_to_their_episodes():
    rows = episode_dataset(ENV_ID, range(6))
    assert [r["seed"] for r in rows] == sorted({r["seed"] for r in rows})
    assert all(r["env_id"] == ENV_ID and r["prompt"][0]["role"] == "system" for r in rows)
    rollout = TextEnvRolloutFunc(rows)
    assert rollout.specs([rows[2]["prompt"], rows[0]["prompt"]]) == [
        EpisodeSpec(ENV_ID, rows[2]["seed"]),
        EpisodeSpec(ENV_ID, rows[0]["seed"]),
    ]
    with pytest.raises(KeyError, match="no dataset row opens with"):
        rollout.specs([[{"role": "user", "content": "hello"}]])
    with pytest.raises(ValueError, match="same chat"):
        TextEnvRolloutFunc([rows[0], rows[0]])


def test_a_template_that_is_not_prefix_preserving_is_refused(tokenizer):
    class Reversed:
        chat_template = "x"
        eos_token_id = 0

        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            return "".join(m["content"] for m in reversed(messages))

    with pytest.raises(ValueError, match="not prefix-preserving"):
        ChatTokens(Reversed())


def test_expert_demonstration_opens_every_episode():
    style = expert_demonstration(ENV_ID, 999, turns=2)
    assert [role for role, _ in style.demonstration] == ["user", "assistant", "user", "assistant"]
    commands, _ = expert_commands(999)
    assert [text for role, text in style.demonstration if role == "assistant"] == commands[:2]
    [row] = episode_dataset(ENV_ID, [0], style)
    assert [m["role"] for m in row["prompt"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert row["prompt"][1]["content"].startswith("Goal: ") and "Goal: " in row["prompt"][-1]["content"]
    with pytest.raises(ValueError, match="alternates user and assistant"):
        ChatStyle(demonstration=(("assistant", "go forward"),))
