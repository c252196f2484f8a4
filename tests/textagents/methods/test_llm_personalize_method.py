"""The LLM-Personalize method end to end on a tiny model: zero-shot evaluation, imitation, one self-training
round, datasets and models saved in the run, Table 1 in the report, resume."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from textagents.methods.core.config import ConfigError, load_config
from textagents.methods.core.runner import LLMChoice, evaluate_run, report_run, run_method
from textagents.methods.llm_personalize.config import LLMPersonalizeConfig

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "llm_personalize" / "smoke.yaml"


def test_the_smoke_run_imitates_then_self_trains(tmp_path, tiny_models):
    out = tmp_path / "run"
    run_method("llm_personalize", SMOKE, out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["kind"] == "train" and "zero_shot/test/success_rate" in first and first["pairs"] > 0
    assert first["loss_last"] < first["loss_first"]
    assert [(r["kind"], r["iteration"]) for r in records] == [("train", 1), ("eval", 1), ("train", 2), ("eval", 2)]
    assert {"test/success_rate", "train/success_rate", "test/parse_rate"} <= records[1].keys()
    assert first["pairs/Pomaria_2_int"] == first["pairs"]
    assert len(records[1]["test/episode_success/Pomaria_2_int"]) == 1  # smoke: one episode per split
    self_training = records[2]
    assert self_training["rollouts"] == 1 and self_training["planning_calls"] > 0
    assert self_training["selection/kept"] == self_training["pairs"] == self_training["pairs/Pomaria_2_int"]
    assert 0 <= first["coverage/test"] == first["coverage/test/Pomaria_2_int"] <= 1
    assert self_training["coverage/train"] >= first["coverage/train"]  # the pairs only add placements
    outcomes = [k for k in self_training if k.startswith("selection/") and k.count("/") == 1]
    assert sum(self_training[k] for k in outcomes) == self_training["planning_calls"]
    imitation = (out / "datasets" / "imitation_train.jsonl").read_text().splitlines()
    assert imitation and json.loads(imitation[0])["messages"][0]["content"] == "You are a one-handed household robot."
    assert (out / "datasets" / "self_training_1.jsonl").is_file()
    assert (out / "models" / "iter_000001" / "model.safetensors").is_file()
    report = (out / "report.md").read_text()
    assert (
        "## Table 1" in report and "| zero-shot |" in report and "| IL |" in report and "| ST iteration 1 |" in report
    )
    kept = f"{self_training['pairs/Pomaria_2_int']} | {self_training['pairs']} | {self_training['selection/kept']} |"
    assert (
        "## Training pairs per round" in report
        and f"| ST iteration 1 | 1 | {records[2]['planning_calls']} | " in report
    )
    assert kept in report
    chats = [json.loads(line) for line in (out / "llm_calls.jsonl").read_text().splitlines()]
    sampling = {k: v for k, v in next(c for c in chats if c["kind"] == "chat")["request"].items() if k != "messages"}
    assert sampling | {"seed": 0} == {  # the original's sampling_params (igib_v2_nav_sp.yaml)
        "kind": "chat",
        "max_tokens": 8,
        "temperature": 1.0,
        "top_p": 0.9,
        "frequency_penalty": 0.2,
        "presence_penalty": 0.2,
        "stop": ["\\n"],
        "seed": 0,
    }
    _fine_tuned_model_is_servable(out / "models" / "iter_000001")
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(out, moved)
    shutil.rmtree(out)  # a run folder moved or copied: its checkpoints name their models relative to it
    assert (report_run("llm_personalize", moved)).read_text() == report


def _fine_tuned_model_is_servable(model_dir: Path) -> None:
    """``textagents serve``'s server over a run's fine-tuned model answers as the model does locally."""
    import openai

    from textagents.llm.server import ModelHTTPServer
    from textagents.llm.transformers_backend import TransformersBackend

    messages = [{"role": "user", "content": "tidy the kitchen"}]
    local = TransformersBackend(model_dir).chat(messages, max_tokens=6)
    server = ModelHTTPServer(TransformersBackend(model_dir), port=0, model_name="tuned").start()
    try:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)
        reply = client.chat.completions.create(model="tuned", messages=messages, max_tokens=6, temperature=0)
        assert reply.choices[0].message.content == local
    finally:
        server.stop()


def test_a_model_that_the_chosen_fine_tuning_cannot_train_is_refused_before_any_work(tmp_path, tiny_models):
    server = LLMChoice(model="m", base_url="http://127.0.0.1:9/v1")  # nothing listens: it must not be asked
    with pytest.raises(RuntimeError, match="fine-tunes a local transformers model"):
        run_method("llm_personalize", SMOKE, tmp_path / "a", llm=server, progress=False)
    config = tmp_path / "openai.yaml"
    config.write_text(SMOKE.read_text() + "fine_tuning: openai\n")
    with pytest.raises(RuntimeError, match="fine_tuning: openai fine-tunes a model behind an OpenAI API"):
        run_method(
            "llm_personalize", config, tmp_path / "b", llm=LLMChoice(model=str(tiny_models.causal)), progress=False
        )


def test_the_cpu_config_keeps_the_papers_loop_and_names_each_cut_in_its_header():
    cpu_yaml = SMOKE.with_name("cpu.yaml")
    cpu, paper = (
        load_config(LLMPersonalizeConfig, cpu_yaml),
        load_config(LLMPersonalizeConfig, SMOKE.with_name("paper.yaml")),
    )
    kept = ("command_budget", "max_new_tokens", "epochs")
    assert [getattr(cpu, name) for name in kept] == [getattr(paper, name) for name in kept] == [150, 256, 1.0]
    assert cpu.sampling() == paper.sampling() and cpu.plan_rules() == paper.plan_rules()
    assert cpu.rollout_backend == "llamacpp" and set(cpu.baselines) == {"saycan", "sayplan"}
    assert cpu.eval_episodes * 2 * len(cpu.scenes) >= 40  # at least 40 evaluation episodes per planner and seed
    header = "".join(line for line in cpu_yaml.read_text().splitlines(keepends=True) if line.startswith("#"))
    changed = [f.name for f in dataclasses.fields(cpu) if getattr(cpu, f.name) != getattr(paper, f.name)]
    assert changed and [name for name in changed if f" {name} " not in header and f" {name}," not in header] == []


def test_bad_settings_are_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("scenes: []\n")
    with pytest.raises(ConfigError, match="scenes must name at least one scene"):
        load_config(LLMPersonalizeConfig, path)
    path.write_text("command_budget: 0\n")
    with pytest.raises(ConfigError, match="command_budget must be >= 1"):
        load_config(LLMPersonalizeConfig, path)
    for line, message in (
        ("parser: loose", r"parser must be one of \['original', 'lenient'\], got 'loose'"),
        ("presence_penalty: 2.5", r"frequency_penalty and presence_penalty must be in \[-2, 2\], got 0.2, 2.5"),
        ("fail_threshold: -1", "fail_threshold must be >= 0, got -1"),
        ("baseline_eval_episodes: 6", r"baseline_eval_episodes must be in 1..eval_episodes \(5\) or unset, got 6"),
        ("baseline_command_budget: 0", "baseline_command_budget must be >= 1 or unset, got 0"),
        ("rollout_state_cache_mb: -1", r"rollout_state_cache_mb must be >= 0 \(0: off\), got -1"),
    ):
        path.write_text(line + "\n")
        with pytest.raises(ConfigError, match=message):
            load_config(LLMPersonalizeConfig, path)


def test_the_baselines_play_the_first_evaluation_episodes_with_their_own_budget(tmp_path, tiny_models):
    config = tmp_path / "baselines.yaml"
    smoke = SMOKE.read_text().replace("iterations: 2", "iterations: 1").replace("eval_episodes: 1", "eval_episodes: 2")
    config.write_text(smoke + "baseline_eval_episodes: 1\nbaseline_command_budget: 2\n")
    out = tmp_path / "run"
    run_method("llm_personalize", config, out, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    first = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert first["zero_shot/test/episodes"] == first["zero_shot/train/episodes"] == 2
    for baseline in ("saycan", "sayplan"):
        assert first[f"{baseline}/test/episodes"] == first[f"{baseline}/train/episodes"] == 1
        assert len(first[f"{baseline}/test/episode_success/Pomaria_2_int"]) == 1
    # one command a call: no call past 2 steps (smoke.yaml's command_budget 6 would allow 7)
    assert first["saycan/test/planning_calls"] <= 3 and first["saycan/train/planning_calls"] <= 3


def test_checkpoint_0_evaluates_the_zero_shot_planner_or_a_baseline_again(tmp_path, tiny_models):
    """``method eval --checkpoint 0`` plays the untrained planner again, or with ``eval_planner`` a baseline (so
    that either can be evaluated on more episodes than the run gave it): on the run's own episodes, the rows
    the run recorded."""
    config = tmp_path / "three_iterations.yaml"
    config.write_text(SMOKE.read_text().replace("iterations: 2", "iterations: 3"))
    out, llm = tmp_path / "run", LLMChoice(model=str(tiny_models.causal))
    run_method("llm_personalize", config, out, llm=llm, progress=False)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = records[0]
    # every round's planner stays evaluable (the default keeps every checkpoint): IL's is checkpoint 1
    il = evaluate_run("llm_personalize", out, checkpoint=1, llm=llm)
    assert il["iteration"] == 1 and il["test/success_rate"] == records[1]["test/success_rate"]
    for planner, row in (("planner", "zero_shot"), ("saycan", "saycan"), ("sayplan", "sayplan")):
        result = evaluate_run("llm_personalize", out, checkpoint=0, llm=llm, settings={"eval_planner": planner})
        assert result["iteration"] == 0
        measures = [k for k in result if k.startswith(("test/", "train/"))]
        assert len(measures) > 10 and {k: result[k] for k in measures} == {k: first[f"{row}/{k}"] for k in measures}
    logs = {path.name: path.read_bytes() for path in (out / "answers").glob("*.jsonl")}
    more = evaluate_run("llm_personalize", out, checkpoint=0, llm=llm, settings={"eval_episodes": 2})
    assert more["test/episodes"] == 2  # smoke.yaml's one scene
    assert {path.name: path.read_bytes() for path in (out / "answers").glob("*.jsonl")}.items() > logs.items()
    with pytest.raises(ConfigError, match=r"eval_planner must be one of \['planner', 'saycan', 'sayplan'\]"):
        evaluate_run("llm_personalize", out, checkpoint=0, llm=llm, settings={"eval_planner": "oracle"})


def test_replaying_a_recorded_run_reproduces_its_metrics_exactly(tmp_path, tiny_models):
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    run_method("llm_personalize", SMOKE, recorded, llm=LLMChoice(model=str(tiny_models.causal)), progress=False)
    calls = tmp_path / "calls.jsonl"
    calls.write_bytes((recorded / "llm_calls.jsonl").read_bytes())
    run_method("llm_personalize", SMOKE, replayed, llm=LLMChoice(replay=str(calls)), progress=False)

    def records(run):
        trained = {"loss_first", "loss_last", "examples", "time", "elapsed_s"}
        lines = (run / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k not in trained} for line in lines]

    original = records(recorded)
    assert len(original) == 4 and any("saycan/test/parse_rate" in r for r in original)
    assert records(replayed) == original
    for name in ("imitation_train", "self_training_1"):
        assert (replayed / "datasets" / f"{name}.jsonl").read_text() == (
            recorded / "datasets" / f"{name}.jsonl"
        ).read_text()
    assert not (replayed / "models").exists()  # nothing was trained

    def answers(run):  # every stage's logged answers: the fine-tuned planner's are not the zero-shot one's
        logs = sorted((run / "answers").glob("*.jsonl"))
        return sorted(json.dumps(r) for log in logs for r in map(json.loads, log.read_text().splitlines()[1:]))

    assert len(list((replayed / "answers").glob("eval-*.jsonl"))) == len(list((recorded / "answers").glob("eval-*")))
    assert answers(replayed) == answers(recorded)


def _records(run):
    """A run's metrics records, their times left out."""
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "time"} for line in lines]


def _calls(run):
    """A run's recorded LLM calls: (request key, response)."""
    lines = (run / "llm_calls.jsonl").read_text().splitlines()
    return [(record["key"], record["response"]) for record in map(json.loads, lines)]


def test_a_run_resumed_with_more_iterations_continues_where_it_stopped_as_an_uninterrupted_run(tmp_path, tiny_models):
    llm = LLMChoice(model=str(tiny_models.causal))
    whole, extended = tmp_path / "whole", tmp_path / "extended"
    run_method("llm_personalize", SMOKE, whole, llm=llm, progress=False)
    shorter = tmp_path / "one_iteration.yaml"
    shorter.write_text(SMOKE.read_text().replace("iterations: 2", "iterations: 1"))
    run_method("llm_personalize", shorter, extended, llm=llm, progress=False)
    imitation = (extended / "datasets" / "imitation_train.jsonl").stat().st_mtime_ns
    run_method("llm_personalize", SMOKE, extended, llm=llm, progress=False, resume=True)

    assert _records(extended) == _records(whole)  # iteration 2 once, as without the stop
    assert _calls(extended) == _calls(whole)  # iteration 1's evaluations were not played again
    assert (extended / "datasets" / "imitation_train.jsonl").stat().st_mtime_ns == imitation
    assert json.loads((extended / "config.json").read_text())["config"]["iterations"] == 2


def test_a_run_stopped_in_the_middle_of_an_iteration_resumes_without_asking_or_training_again(
    tmp_path, tiny_models, monkeypatch
):
    from textagents.llm.transformers_backend import TransformersBackend
    from textagents.methods.llm_personalize import method

    llm = LLMChoice(model=str(tiny_models.causal))
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    batches = []
    chat_batch = TransformersBackend.chat_batch

    def counted(self, conversations, **sampling):
        if len(batches) == stop_at:
            raise KeyboardInterrupt  # the machine taken back, in iteration 2's evaluation
        batches.append(len(conversations))
        return chat_batch(self, conversations, **sampling)

    def keep_every_call(calls):  # so that round 2 fine-tunes whatever the tiny model plans
        plan = {"role": "assistant", "content": "step 1: mission complete"}
        return [("kept", [*call.messages[:2], plan]) for call in calls]

    monkeypatch.setattr(TransformersBackend, "chat_batch", counted)
    monkeypatch.setattr(method, "self_training_selection", keep_every_call)
    stop_at = None
    run_method("llm_personalize", SMOKE, whole, llm=llm, progress=False)
    asked = len(batches)
    batches.clear()
    stop_at = asked - 1
    with pytest.raises(KeyboardInterrupt):
        run_method("llm_personalize", SMOKE, stopped, llm=llm, progress=False)
    trained = (stopped / "models" / "iter_000002" / "trained.json").stat().st_mtime_ns
    assert len(list((stopped / "answers").glob("rollouts-planner-*.jsonl"))) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("fine-tuned again")

    monkeypatch.setattr(method, "finetune", refuse)
    batches.clear()
    stop_at = None
    run_method("llm_personalize", SMOKE, stopped, llm=llm, progress=False, resume=True)

    assert len(batches) == 1  # only the round it stopped in: the rollouts and the rounds before came from the log
    assert _records(stopped) == _records(whole)
    assert _calls(stopped) == _calls(whole)
    assert (stopped / "models" / "iter_000002" / "trained.json").stat().st_mtime_ns == trained


def test_table1_says_when_a_self_training_round_selected_no_pairs():
    from textagents.methods.llm_personalize.report import render_table1, table1_rows

    def evaluation(iteration: int, success: float) -> dict:
        return {"kind": "eval", "iteration": iteration, "test/success_rate": success, "train/success_rate": success}

    metrics = [
        evaluation(1, 0.1),
        {"kind": "train", "iteration": 2, "pairs": 12},
        evaluation(2, 0.2),
        {"kind": "train", "iteration": 3, "pairs": 0},
        evaluation(3, 0.2),
    ]
    rows = table1_rows(metrics)
    assert [(row.label, row.pairs) for row in rows] == [("IL", None), ("ST iteration 1", 12), ("ST iteration 2", 0)]
    table = render_table1(rows)
    assert "| ST iteration 1 (12 pairs selected) | 20.0" in table
    assert "| ST iteration 2 (0 pairs selected) | 20.0" in table
    assert "selected 0 pairs trained nothing" in table
