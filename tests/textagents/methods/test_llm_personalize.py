"""LLM-Personalize's plan parser on the paper's recorded plans (its fine-tuning pairs) and on edge cases, and
the paper's selection of imitation-learning demonstrations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textagents.methods.llm_personalize import demonstrations
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig
from textagents.methods.llm_personalize.demonstrations import demonstrate, select_demonstrations
from textagents.methods.llm_personalize.plan_parser import (
    MAX_STEPS,
    MISSION_COMPLETE,
    parse_plan,
    split_steps,
    steps_read,
)
from textagents.methods.llm_personalize.planner import PlanRules
from textenvs.envs.housekeep.env import HousekeepTextEnv
from textenvs.envs.housekeep.prompts import planner_prompt


def _recorded_plans(data_dir):
    for name in ("il_pairs_pomaria_2_train.jsonl", "st_iter1_pairs_pomaria_2_train.jsonl"):
        for line in (data_dir / "llm_personalize" / name).read_text().splitlines():
            yield json.loads(line)["messages"][2]["content"]


def test_every_recorded_plan_parses_into_known_steps(data_dir):
    plans = list(_recorded_plans(data_dir))
    assert len(plans) > 100
    verbs = set()
    for answer in plans:
        parsed = parse_plan(answer)
        assert parsed.unparseable == 0 and parsed.dropped == 0, answer
        numbered = answer.count("step ") + 1
        assert len(parsed.steps) == numbered, answer
        verbs |= {step.verb for step in parsed.steps}
    assert verbs == {"go to", "look at", "pick up", "place", MISSION_COMPLETE}


def test_an_object_plan_reads_back_as_the_commands_it_names():
    answer = (
        "go to tennis ball 1\nstep 2: look at tennis ball 1\nstep 3: pick up tennis ball 1\n"
        "step 4: go to bedroom 0 shelf 9\nstep 5: look at bedroom 0 shelf 9\n"
        "step 6: place tennis ball 1 on bedroom 0 shelf 9"
    )
    assert [s.command for s in parse_plan(answer).steps] == [
        "go to tennis ball 1",
        "look at tennis ball 1",
        "pick up tennis ball 1",
        "go to bedroom 0 shelf 9",
        "look at bedroom 0 shelf 9",
        "place tennis ball 1 on bedroom 0 shelf 9",
    ]


def test_the_originals_splitting_rules():
    # lower-cased, " :" joined, "step3:" markers, trailing "." and "," stripped, empty pieces dropped
    assert split_steps("Go to Bathroom 0.\n\nstep 2 : go to bedroom 0,step3: Mission complete.") == [
        "go to bathroom 0",
        "go to bedroom 0",
        "mission complete",
    ]


def test_unparseable_steps_are_counted_and_long_plans_cut_at_ten():
    parsed = parse_plan("go to kitchen 0\nstep 2: dance with the cat\nstep 3: I think I am done")
    assert [s.verb for s in parsed.steps] == ["go to", None, None] and parsed.unparseable == 2
    long = parse_plan("\n".join(f"step {i}: go to room {i}" for i in range(2, 16)), max_steps=10)
    assert len(long.steps) == 10 and long.dropped == 4  # 14 steps
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        parse_plan("go to x", max_steps=0)
    with pytest.raises(ValueError, match=r"parser must be one of \['original', 'lenient'\], got 'loose'"):
        parse_plan("go to x", parser="loose")


def test_once_a_plan_has_more_steps_than_are_read_more_text_changes_none_of_them(data_dir):
    """``steps_read``, where llama.cpp rollouts stop generating: at every prefix of an answer where it holds,
    the steps read (the first 10) are already the whole answer's. Checked on the paper's plans, our CPU run's
    recorded answers (SmolLM2's rambling ones included) and long answers with the splitting's edge cases."""
    recorded = Path(__file__).resolve().parents[3] / "benchmarks/methods/llm_personalize/results/cpu/llm_calls.jsonl"
    answers = [*_recorded_plans(data_dir)]
    answers += [json.loads(line)["response"] for line in recorded.read_text().splitlines()]
    answers += [
        "\n".join(f"step {i}: go to room {i}" for i in range(1, 15)),
        "go to a step 2 :go to b" + "".join(f" step {i} : look at c {i}." for i in range(3, 14)),
        "step1:go to a,step2:go to b" + "".join(f",step{i}:pick up d{i}" for i in range(3, 13)) + "\n\n\nmore",
        "\n".join(["go to x"] * 9 + ["go to y step 1", "0: still ten", "and eleven", "twelve"]),
    ]
    stopped = 0
    for answer in answers:
        read = split_steps(answer)[:MAX_STEPS]
        for end in range(len(answer) + 1):
            if steps_read(answer[:end]):
                assert split_steps(answer[:end])[:MAX_STEPS] == read, (answer, end)
                stopped += end < len(answer)
    assert stopped > 100  # the check met answers that go on past their read steps


def test_the_lenient_parser_reads_numbered_and_inline_steps_that_the_original_skips():
    answer = "1. go to bedroom 0\n- pick up 'cup 1'\ngo to kitchen 0 and place cup 1 on kitchen 0 sink 2"
    original, lenient = parse_plan(answer), parse_plan(answer, parser="lenient")
    assert [s.command for s in original.steps] == [None, None, "go to kitchen 0 and place cup 1 on kitchen 0 sink 2"]
    assert [s.command for s in lenient.steps] == [
        "go to bedroom 0",
        "pick up 'cup 1'",
        "place cup 1 on kitchen 0 sink 2",
    ]


def test_a_demonstration_gives_one_pair_per_planning_call_with_the_papers_prompt():
    env = HousekeepTextEnv(scenes=["Pomaria_2_int"], episode_source="llm_personalize")
    pairs = demonstrate(env, "Pomaria_2_int", 30)
    assert pairs is not None and pairs[-1][2]["content"] == MISSION_COMPLETE
    first = pairs[0]
    assert first[0]["content"] == "You are a one-handed household robot."
    assert first[1]["content"] == planner_prompt(
        "You are holding nothing.\n"
        + first[1]["content"].split("You are holding nothing.\n")[1].split(". \nGive me")[0]
    )
    assert all(parse_plan(p[2]["content"]).unparseable == 0 for p in pairs)


def test_the_papers_selection_of_demonstrations():
    chosen = select_demonstrations(scenes=["Pomaria_2_int"], train=3, validation=1)
    # from episode index 25 on, test-split indices (mod 25 < 5) included, as the original's notebook
    assert chosen.episodes["Pomaria_2_int"] == [25, 26, 27, 28] and not chosen.rejected["Pomaria_2_int"]
    assert len(chosen.train["Pomaria_2_int"]) > 3 * 2 and len(chosen.validation["Pomaria_2_int"]) >= 2


def test_the_demonstration_pool_is_every_episode_from_index_25(monkeypatch):
    def clean_from_48(env, scene, index, seed=0):
        return [[{"role": "user", "content": str(index)}]] if index >= 48 else None

    monkeypatch.setattr(demonstrations, "demonstrate", clean_from_48)
    chosen = select_demonstrations(scenes=["Rs_int"], train=3, validation=1)
    assert chosen.rejected["Rs_int"] == list(range(25, 48))
    assert chosen.episodes["Rs_int"] == [48, 49, 50, 51]  # 50 and 51 are test-split indices
    monkeypatch.setattr(demonstrations, "demonstrate", lambda env, scene, index, seed=0: [] if index >= 96 else None)
    with pytest.raises(ValueError, match=r"only 4 clean demonstrations among episodes 25\.\.99; need 5"):
        select_demonstrations(scenes=["Rs_int"], train=4, validation=1)


class _DemonstratorBackend:
    """Answers every planning call with the faithful demonstrator's plan for the env's current state."""

    model_name = "demonstrator"

    def __init__(self, env):
        from textagents.llm import TokenUsage

        self.env, self.usage, self.planner, self.episode = env, TokenUsage(), None, None

    def chat(self, messages, **sampling):
        from textenvs.envs.housekeep.expert import format_plan, make_planner

        world = self.env.unwrapped.world
        if world is not self.episode:
            self.episode, self.planner = world, make_planner("faithful", world)
        return format_plan(self.planner.plan(world))


class _RamblingBackend:
    model_name = "rambling"

    def __init__(self):
        from textagents.llm import TokenUsage

        self.usage = TokenUsage()

    def chat(self, messages, **sampling):
        return "I will tidy the house now.\nFirst, I should think about it."


def test_the_planner_loop_with_the_demonstrators_plans_tidies_every_episode():
    from textagents.methods.llm_personalize.planner import play, summarize

    env = HousekeepTextEnv(scenes=["Merom_1_int", "Rs_int"], episode_source="llm_personalize", split="test")
    backend = _DemonstratorBackend(env)
    (run,) = play(lambda: env, backend, [("Merom_1_int", 3)])
    assert run.metrics["success_rate"] == 1.0 and run.parse_rate == 1.0 and run.step_success_rate == 1.0
    assert run.calls[0].steps[0].startswith("go to") and run.calls[-1].steps == [MISSION_COMPLETE]
    movers = [call for call in run.calls if call.raised_correct_count]
    assert movers and all(len(call.moves) == 1 and call.moves[0][2] != "held" for call in movers)
    assert len({call.dedup_key for call in movers}) == len(movers)
    assert not run.calls[0].moves and not run.calls[0].raised_correct_count  # the room sweep moves nothing
    assert run.calls[0].discovered > 0 and run.calls[0].score == run.calls[0].discovered
    assert all(call.score >= 10 for call in movers)  # + 10 per object that became correct
    assert run.calls[0].messages[1]["content"].endswith("Steps: step 1:")  # the original's user + prefix
    runs = {scene: play(lambda: env, backend, [(scene, i)]) for scene in ("Merom_1_int", "Rs_int") for i in (0,)}
    result = summarize(runs)
    assert result["success_rate"] == result["success_rate/Rs_int"] == 1.0 and result["parse_rate"] == 1.0
    assert result["episode_success/Rs_int"] == [1.0] and result["success_rate_std/Rs_int"] == 0.0
    assert result["placements"] > 0 and result["placed_correctly"] == 1.0  # the demonstrator places as preferred
    assert result["failed_steps/unparseable"] == result["failed_steps/failed"] == 0.0


def test_the_selection_keeps_each_raising_call_once_and_counts_why_it_left_the_others_out():
    from textagents.methods.llm_personalize.planner import (
        SELECTION_OUTCOMES,
        play,
        selection_counts,
        self_training_selection,
    )

    env = HousekeepTextEnv(scenes=["Merom_1_int"], episode_source="llm_personalize", split="test")
    (run,) = play(lambda: env, _DemonstratorBackend(env), [("Merom_1_int", 3)])
    raised = [call.raised_correct_count for call in run.calls]
    selection = self_training_selection(run.calls + run.calls)  # the same calls twice: the second are duplicates
    outcomes = [outcome for outcome, _ in selection]
    assert [o == "kept" for o in outcomes[: len(raised)]] == raised and any(raised)
    assert [o == "duplicate" for o in outcomes[len(raised) :]] == raised
    assert outcomes[0] == "moved_nothing" and outcomes[len(raised) - 1] == "moved_nothing"  # sweep, mission complete
    assert [pair is not None for _, pair in selection] == [o == "kept" for o in outcomes]
    counts = selection_counts([("Merom_1_int", o) for o in outcomes], ["Merom_1_int", "Rs_int"])
    assert counts["pairs/Merom_1_int"] == counts["selection/kept"] == sum(raised) and counts["pairs/Rs_int"] == 0
    assert counts["selection/Merom_1_int/duplicate"] == sum(raised) and counts["selection/Rs_int/duplicate"] == 0
    assert sum(counts[f"selection/{o}"] for o in SELECTION_OUTCOMES) == 2 * len(raised)


def test_coverage_is_the_share_of_misplaced_objects_whose_correct_placement_a_pair_shows():
    from textagents.methods.llm_personalize.coverage import placements, preference_coverage

    def make_env():
        return HousekeepTextEnv(scenes=["Rs_int"], episode_source="llm_personalize")

    env = make_env()
    env.reset(seed=7, options={"scene": "Rs_int", "episode_index": 7})
    world = env.unwrapped.world
    first, *others = world.misplaced_at_start
    name = world.object_names[first]
    correct = min(world.receptacles[r].name for r in world.correct[first])
    where = world.receptacles[world.location[first]].name  # misplaced: not a correct receptacle
    plan = f"go to {name}\nstep 2: pick up {name}\nstep 3: place {name} on {correct}"
    assert placements([plan]) == {(name.lower(), correct.lower())}
    share = 1 / (1 + len(others))
    assert preference_coverage(make_env, [("Rs_int", 7)], placements([plan])) == {"Rs_int": share, "all": share}
    assert preference_coverage(make_env, [("Rs_int", 7)], placements([f"place {name} on {where}"]))["all"] == 0


def test_a_planner_that_never_names_a_command_never_acts_and_stops_after_31_skipped_steps():
    from textagents.methods.llm_personalize.planner import play, self_training_selection, summarize

    env = HousekeepTextEnv(scenes=["Rs_int"], episode_source="llm_personalize")
    (run,) = play(lambda: env, _RamblingBackend(), [("Rs_int", 7)])
    assert run.parse_rate == 0.0 and run.metrics["success_rate"] == 0.0
    # the original's fail_counter > 30: 31 skipped steps (2 per plan), then the episode ends
    assert len(run.calls) == 16 and sum(len(call.played) for call in run.calls) == 31
    assert env.unwrapped.world.commands == 0  # skipped steps do not act
    assert summarize({"Rs_int": [run]})["failed_steps/unparseable"] == 1.0
    assert summarize({"Rs_int": [run]})["placements"] == 0.0
    assert {outcome for outcome, _ in self_training_selection(run.calls)} == {"unparsed"}


class _OneRoomInTen:
    """Nine unparseable steps, then a room: never 31 skipped steps in a row."""

    model_name = "one-room-in-ten"

    def __init__(self):
        from textagents.llm import TokenUsage

        self.usage = TokenUsage()

    def chat(self, messages, **sampling):
        return "\n".join(["hmm"] * 9 + ["go to bedroom 0"])


def test_the_command_budget_counts_skipped_steps_and_is_checked_when_a_new_plan_is_needed():
    from textagents.methods.llm_personalize.planner import play

    env = HousekeepTextEnv(scenes=["Rs_int"], episode_source="llm_personalize")
    (run,) = play(lambda: env, _OneRoomInTen(), [("Rs_int", 7)], rules=PlanRules(command_budget=25))
    # 10 steps per plan: 10, 20, 30 > 25 when the fourth plan would be asked for (the original's cur_step)
    assert len(run.calls) == 3 and sum(len(call.played) for call in run.calls) == 30
    assert env.unwrapped.world.commands == 3 and run.failure_counts() == {"unparseable": 27}


class _ExplorerBackend:
    """A planner whose answer is a function of the prompt alone: go to the first unexplored room, then to
    the first receptacle named, then pick up an object that is not there: failures of each kind."""

    model_name = "explorer"

    def __init__(self):
        from textagents.llm import TokenUsage

        self.usage = TokenUsage()

    def chat(self, messages, **sampling):
        import re

        prompt = messages[1]["content"]
        rooms = re.findall(r"In ([a-z ]+ \d+), no receptacles found yet", prompt)
        failure = "The step" in prompt
        first = f"step 1: go to {rooms[0]}" if rooms else "step 1: mission complete"
        return f"{first}\nstep 2: pick up ghost 1\nstep 3: dance\nstep 4: go to {rooms[-1] if rooms else 'x'}" + (
            "\nstep 5: mission complete" if failure and not rooms else ""
        )


def test_episodes_played_together_match_episodes_played_alone():
    from textagents.methods.llm_personalize.planner import play

    jobs = [("Rs_int", 0), ("Merom_1_int", 5), ("Pomaria_2_int", 30)]

    def make_env():
        return HousekeepTextEnv(scenes=["Rs_int", "Merom_1_int", "Pomaria_2_int"], episode_source="llm_personalize")

    for variant in ("planner", "sayplan"):
        rules = PlanRules(command_budget=20)
        together = play(make_env, _ExplorerBackend(), jobs, variant=variant, rules=rules)
        alone = [play(make_env, _ExplorerBackend(), [job], variant=variant, rules=rules)[0] for job in jobs]
        assert [r.metrics for r in together] == [r.metrics for r in alone]
        assert [[c.answer for c in r.calls] for r in together] == [[c.answer for c in r.calls] for r in alone]


def test_sayplan_replans_after_a_failed_step_with_the_failure_in_the_prompt():
    from textagents.methods.llm_personalize.planner import play

    env = HousekeepTextEnv(scenes=["Rs_int"], episode_source="llm_personalize")
    rules = PlanRules(command_budget=12)
    (planner,) = play(lambda: env, _ExplorerBackend(), [("Rs_int", 0)], variant="planner", rules=rules)
    (sayplan,) = play(lambda: env, _ExplorerBackend(), [("Rs_int", 0)], variant="sayplan", rules=rules)
    assert [ok for _, ok in planner.calls[0].played] == [True, False, False, True]  # the whole plan is played
    assert [ok for _, ok in sayplan.calls[0].played] == [True, False]  # stopped at the first failure
    assert sayplan.calls[0].failures == ["not_admissible"] and planner.calls[0].failures == [
        "not_admissible",
        "unparseable",
    ]
    feedback = sayplan.calls[1].messages[1]["content"]
    assert "The step 'pick up ghost 1' failed: 'pick up ghost 1' is not a valid command" in feedback
    assert "The step" not in planner.calls[1].messages[1]["content"]


def test_saycan_plays_the_best_scored_admissible_command(tiny_models):
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.methods.llm_personalize.planner import play

    class Scored:
        """Scores from a real model, recorded: the chosen command must be the argmax of its scores."""

        model_name = "scored"

        def __init__(self):
            self.backend, self.asked = TransformersBackend(tiny_models.causal), []
            self.usage = self.backend.usage

        def score(self, contexts, candidates):
            scores = self.backend.score(contexts, candidates)
            self.asked.append((contexts, candidates, scores))
            return scores

    env = HousekeepTextEnv(scenes=["Rs_int"], episode_source="llm_personalize")
    backend = Scored()
    (run,) = play(lambda: env, backend, [("Rs_int", 0)], variant="saycan", rules=PlanRules(command_budget=6))
    assert len(run.calls) == len(backend.asked) == sum(len(c.played) for c in run.calls)
    for call, (contexts, candidates, scores) in zip(run.calls, backend.asked, strict=True):
        best = max(range(len(candidates[0])), key=scores[0].__getitem__)
        assert call.steps == [candidates[0][best]] and call.played[0][0] == candidates[0][best]
        assert contexts[0] == f"{call.messages[0]['content']}\n\n{call.messages[1]['content']}"
        assert contexts[0].endswith("Steps: step 1:")
        assert "mission complete" in candidates[0]
    assert run.parse_rate == 1.0


def test_an_unknown_variant_is_refused():
    from textagents.methods.llm_personalize.planner import play

    with pytest.raises(
        ValueError, match=r"unknown planner variant 'saycam'; valid: \['planner', 'sayplan', 'saycan'\]"
    ):
        play(lambda: None, _RamblingBackend(), [], variant="saycam")


@pytest.mark.parametrize(("lora", "learning_rate"), [(True, 5e-2), (False, 1e-2)])
def test_fine_tuning_on_demonstration_pairs_lowers_the_loss_and_saves_a_loadable_model(
    tmp_path, tiny_models, lora, learning_rate
):
    import torch

    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.methods.llm_personalize.finetune import FinetuneSettings, finetune

    env = HousekeepTextEnv(scenes=["Pomaria_2_int"], episode_source="llm_personalize")
    pairs = demonstrate(env, "Pomaria_2_int", 30)[:3]
    backend = TransformersBackend(tiny_models.causal)
    before = {k: v.clone() for k, v in backend.model.state_dict().items()}
    settings = FinetuneSettings(epochs=4, learning_rate=learning_rate, batch_size=3, lora=lora, max_length=512)
    result = finetune(backend, pairs, tmp_path / "model", settings)
    assert result["loss_last"] < result["loss_first"]
    after = backend.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before if k in after)
    reloaded = TransformersBackend(tmp_path / "model")
    assert (tmp_path / "model" / "model.safetensors").stat().st_mode & 0o777 == 0o644  # readable by the team
    prompt = [pairs[0][:2]]
    assert reloaded.chat(prompt[0], max_tokens=5) == backend.chat(prompt[0], max_tokens=5)


def test_micro_batches_accumulate_into_the_same_update_as_the_whole_batch(tmp_path, tiny_models):
    import torch

    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.methods.llm_personalize.finetune import FinetuneSettings, finetune

    env = HousekeepTextEnv(scenes=["Pomaria_2_int"], episode_source="llm_personalize")
    pairs = demonstrate(env, "Pomaria_2_int", 30)[:4]  # plans of different lengths: token counts differ
    weights = {"start": dict(TransformersBackend(tiny_models.causal).model.state_dict())}
    for micro_batch in (None, 1, 2):
        backend = TransformersBackend(tiny_models.causal)
        for module in backend.model.modules():  # the tiny GPT-2's dropout draws other masks for other batches
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        settings = FinetuneSettings(
            epochs=2, learning_rate=1e-2, batch_size=4, micro_batch=micro_batch, lora=False, max_length=4096
        )  # every example whole: at 512 tokens the tiny tokenizer's prompts leave some plans out, and fewer remain
        finetune(backend, pairs, tmp_path / f"model-{micro_batch}", settings)
        weights[micro_batch] = {k: v.clone() for k, v in backend.model.state_dict().items()}
    assert any(not torch.equal(weights["start"][k], v) for k, v in weights[None].items())
    for micro_batch in (1, 2):
        for key, value in weights[None].items():
            torch.testing.assert_close(weights[micro_batch][key], value, rtol=1e-3, atol=1e-4)  # Adam: float rounding
    with pytest.raises(ValueError, match=r"micro_batch must divide batch_size \(4\), got 3"):
        finetune(backend, pairs, tmp_path / "bad", FinetuneSettings(batch_size=4, micro_batch=3))
    with pytest.raises(ValueError, match=r"micro_batch must divide batch_size \(4\) or be unset, got 3"):
        LLMPersonalizeConfig(micro_batch=3)
