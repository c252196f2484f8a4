"""What the LLM goal source suggested over a run: every recorded answer parsed as the method parses it, the
most frequent goals, how many are ELLM achievements, and the answers' failure causes.

    python benchmarks/methods/ellm/llm_suggestions.py runs/ellm-cpu/goal_source=llm_seed0 \
        --out benchmarks/methods/ellm/results/cpu/llm_suggestions_seed0

Reads the run's ``llm_calls.jsonl`` (or ``llm_calls.jsonl.gz``); writes ``<out>.json`` and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter
from pathlib import Path

from textagents.bench.store import write_json_atomic, write_text_atomic
from textagents.methods.ellm.goals import PREREQUISITES
from textagents.methods.ellm.prompt import parse_goals

TOP = 15


def read_calls(run: Path) -> list[dict]:
    plain, packed = run / "llm_calls.jsonl", run / "llm_calls.jsonl.gz"
    text = plain.read_text() if plain.is_file() else gzip.decompress(packed.read_bytes()).decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def summarise(calls: list[dict]) -> dict:
    goals: Counter[str] = Counter()
    empty = non_bullet = 0
    for call in calls:
        parsed = parse_goals(str(call["response"]), strict=False)  # the committed runs parsed leniently
        goals.update(parsed.goals)
        empty += not parsed.goals
        non_bullet += parsed.non_bullet_lines > 0
    total = sum(goals.values())
    valid = sum(n for goal, n in goals.items() if goal in PREREQUISITES)
    return {
        "answers": len(calls),
        "answers_without_goals": empty,
        "answers_with_non_bullet_lines": non_bullet,
        "goals_suggested": total,
        "distinct_goals": len(goals),
        "share_valid_achievement": valid / total if total else 0.0,
        "goals_per_answer": total / len(calls) if calls else 0.0,
        "prompt_tokens": sum(c["usage"]["prompt_tokens"] for c in calls),
        "completion_tokens": sum(c["usage"]["completion_tokens"] for c in calls),
        "top_goals": [[goal, n, goal in PREREQUISITES] for goal, n in goals.most_common(TOP)],
        "top_invalid_goals": [[g, n] for g, n in goals.most_common() if g not in PREREQUISITES][:TOP],
    }


def markdown(summary: dict, run: Path) -> str:
    lines = [
        f"# LLM goal suggestions of `{run.name}`",
        "",
        f"{summary['answers']:,} distinct prompts answered ({summary['prompt_tokens']:,} prompt and "
        f"{summary['completion_tokens']:,} completion tokens); {summary['goals_per_answer']:.2f} goals per "
        f"answer, {summary['distinct_goals']:,} distinct; {summary['share_valid_achievement']:.1%} of the "
        f"suggested goals are ELLM achievements; {summary['answers_without_goals']} answers gave no goal and "
        f"{summary['answers_with_non_bullet_lines']} had lines that are not bullets (the original's strict "
        "parser would have dropped them).",
        "",
        "| most suggested goal | times | an achievement |",
        "|---|---:|:---:|",
        *(f"| {goal} | {n} | {'yes' if ok else 'no'} |" for goal, n, ok in summary["top_goals"]),
        "",
        "| most suggested goal that is not an achievement | times |",
        "|---|---:|",
        *(f"| {goal} | {n} |" for goal, n in summary["top_invalid_goals"]),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="an ellm run with goal_source: llm")
    parser.add_argument("--out", type=Path, required=True, help="output path without extension")
    args = parser.parse_args()
    summary = summarise(read_calls(args.run))
    write_json_atomic(args.out.with_suffix(".json"), summary)
    write_text_atomic(args.out.with_suffix(".md"), markdown(summary, args.run))
    print(markdown(summary, args.run))


if __name__ == "__main__":
    main()
