"""The expert is minigrid's BabyAIBot: same plans, and it solves every GLAM and background-knowledge level."""

from __future__ import annotations

import gymnasium as gym
import pytest
from minigrid.utils.baby_ai_bot import BabyAIBot, DisappearedBoxError

import textenvs  # noqa: F401
from textenvs.core.episode import run_episode
from textenvs.envs.babyai_text.expert import QuickBabyAIBot, bot_failure_reason
from textenvs.envs.babyai_text.registration import BKRL_LEVELS, GLAM_LEVELS

EPISODES = 100


@pytest.mark.parametrize("level", [*GLAM_LEVELS, *BKRL_LEVELS])
def test_expert_solves_every_seeded_episode(level):
    env = gym.make(f"BabyAI-Text-{level}-v0", action_mode="discrete")
    expert = env.unwrapped.expert()
    failed = []
    for seed in range(EPISODES):
        result = run_episode(env, expert, seed=seed)
        if not (result.success and result.invalid_actions == 0 and result.metrics["success"]):
            failed.append((seed, env.unwrapped.mission(), result))
    assert not failed, f"{len(failed)}/{EPISODES} failed; first: {failed[0]}"


@pytest.mark.parametrize("level", ["MixedTrainLocal", "GoTo-RedBallBlueBox-S20", "BossLevel", "UnlockPickup"])
def test_quick_bot_plans_exactly_as_minigrids_bot(level):
    env = gym.make(f"BabyAI-Text-{level}-v0", action_mode="discrete").unwrapped
    for seed in range(3):
        env.reset(seed=seed)
        quick, stock = QuickBabyAIBot(env.level, lambda: env.view), BabyAIBot(env.level)
        for step in range(env.level.max_steps):
            action = quick.replan()
            assert action == stock.replan(), f"seed {seed} step {step}"
            *_, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                break
        assert env.success()


def test_expert_advises_after_the_agent_deviates():
    """Told the action really taken (here: random detours), the bot replans and still succeeds."""
    env = gym.make("BabyAI-Text-PickUpSeqGoToLocal-v0")
    expert = env.unwrapped.expert()
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        expert.reset(obs, info)
        for step in range(200):
            action = expert.act(obs, info)
            if step % 4 == 1:
                action = ("turn left", "turn right", "go forward")[step % 3]
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert info["success"], (seed, env.unwrapped.mission())


def test_expert_gives_up_with_a_warning_where_babyaibot_cannot_solve_the_level():
    env = gym.make("BabyAI-Text-PutNextS5N2Carrying-v0")
    expert = env.unwrapped.expert()
    with pytest.warns(UserWarning, match="BabyAIBot failed") as caught:
        result = run_episode(env, expert, seed=0)
    assert result.ended and result.invalid_actions == 0 and not result.success
    assert expert.failure
    message = str(caught[0].message)
    assert message.startswith("BabyAIBot failed: nothing left to explore on 'PutNextS5N2Carrying'"), message


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (AssertionError(), "one of its internal checks did not hold"),
        (AssertionError("Forward cell is empty"), "Forward cell is empty"),
        (DisappearedBoxError("A box was opened. I am not sure I can help now."), "a box was opened"),
    ],
)
def test_bot_failure_reason_is_a_sentence_without_the_exception_class(error, reason):
    assert bot_failure_reason(error).startswith(reason)
