"""BK-Code's labelling loop with a scripted LLM (no code, refused code, failing code, good code), and the bk
method end to end on a replayed recording of that LLM: the kept code shapes PPO's reward in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

from textagents.llm import TokenUsage
from textagents.llm.record import RecordingBackend
from textagents.methods.bk.code_potential import ERROR_FEEDBACK, SYSTEM_TASK, extract_code, write_potential
from textagents.methods.bk.config import BKConfig
from textagents.methods.bk.method import BKMethod
from textagents.methods.core.config import load_config
from textagents.methods.core.method import RunContext
from textagents.methods.core.runner import LLMChoice, run_method

SMOKE = Path(__file__).resolve().parents[3] / "benchmarks" / "methods" / "bk" / "smoke.yaml"
GOOD = (
    "```python\nimport re\ndef potential(observation):\n    return float(len(re.findall('red ball', observation)))\n```"
)


class Scripted:
    model_name = "scripted"

    def __init__(self, answers):
        self.answers, self.asked, self.usage = list(answers), [], TokenUsage()

    def chat(self, messages, **sampling):
        self.asked.append([dict(m) for m in messages])
        return self.answers.pop(0)


def test_the_code_block_is_taken_as_the_original_does():
    assert extract_code("Here:\n```python\ndef potential(o):\n    return 1.0\n```\nDone.") == (
        "def potential(o):\n    return 1.0\n"
    )
    assert extract_code("def potential(o): return 1.0") is None


def test_errors_are_fed_back_until_code_runs_in_the_sandbox():
    backend = Scripted(
        [
            "I would reward being near the goal.",
            "```python\nimport os\ndef potential(o):\n    return 1.0\n```",
            "```python\ndef potential(o):\n    return 1 / 0\n```",
            GOOD,
        ]
    )
    samples = ["You see a red ball 2 steps forward", "You see a wall 1 step left"]
    result = write_potential(backend, "babyai_text", samples, rounds=4)
    assert result.code is not None and "red ball" in result.code
    assert [r["error"] is None for r in result.rounds] == [False, False, False, True]
    assert result.rounds[1]["error"].startswith("refused before running: import of 'os'")
    assert result.rounds[2]["error"].startswith("ZeroDivisionError")
    assert result.rounds[3]["values"] == [1.0, 0.0]
    assert backend.asked[0][0] == {"role": "system", "content": SYSTEM_TASK}
    assert backend.asked[2][-1]["content"] == ERROR_FEEDBACK.format(error=result.rounds[1]["error"])


def test_the_method_shapes_ppo_with_the_kept_code_from_a_replayed_recording(tmp_path):
    calls = tmp_path / "calls.jsonl"
    samples_run = tmp_path / "record"
    samples_run.mkdir()
    backend = RecordingBackend(Scripted(["no code here", GOOD]), calls)
    method = BKMethod(load_config(BKConfig, SMOKE), RunContext(samples_run, lambda: backend))
    method._label()  # records the two answers for exactly the requests the run will make
    method.close()

    out = tmp_path / "run"
    run_method("bk", SMOKE, out, llm=LLMChoice(replay=str(calls)), progress=False)
    assert (out / "potential.py").read_text() == extract_code(GOOD)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = records[0]
    assert first["code_kept"] == 1.0 and first["code_rounds_without_error"] == 1
    assert first["sandbox/calls"] >= 32 and first["sandbox/failures"] == 0
    assert [r["frames"] for r in records if r["kind"] == "train"] == [32, 64]
    assert 0.0 <= records[-1]["success_rate"] <= 1.0
