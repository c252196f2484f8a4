"""What cutting the labellers' answers (``llm_max_tokens``) changes: two recordings of the same labelling
(``llm_calls.jsonl``), one without a limit (the original's) and one with, matched by their messages. For each
pair of answers: is the cut one the start of the whole one (seeded sampling draws the same tokens until the cut),
and does BK-Pref's parser read the same label from both? Writes the counts as JSON.

    python benchmarks/methods/bk/answer_cut_check.py WHOLE/llm_calls.jsonl CUT/llm_calls.jsonl --out check.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from textagents.bench.store import write_json_atomic
from textagents.methods.bk.pref_prompt import parse_preference


def answers_by_messages(path: Path) -> tuple[dict[str, str], set[Any]]:
    """The recording's answers keyed by their messages, and the ``max_tokens`` its requests asked with."""
    answers, limits = {}, set()
    for line in path.read_text().splitlines():
        call = json.loads(line)
        if call.get("kind") != "chat" or not isinstance(call.get("response"), str):
            continue
        answers[json.dumps(call["request"]["messages"], sort_keys=True)] = call["response"]
        limits.add(call["request"].get("max_tokens"))
    return answers, limits


def compare(whole_path: Path, cut_path: Path) -> dict[str, Any]:
    whole, whole_limits = answers_by_messages(whole_path)
    cut, cut_limits = answers_by_messages(cut_path)
    shared = sorted(whole.keys() & cut.keys())
    rows = [(whole[key], cut[key]) for key in shared]
    same_label = [parse_preference(a) == parse_preference(b) for a, b in rows]
    return {
        "whole": str(whole_path),
        "cut": str(cut_path),
        "max_tokens": {"whole": sorted(map(str, whole_limits)), "cut": sorted(map(str, cut_limits))},
        "answers_compared": len(rows),
        "cut_is_start_of_whole": sum(b == a[: len(b)] for a, b in rows),
        "cut_shorter": sum(len(b) < len(a) for a, b in rows),
        "same_label": sum(same_label),
        "labelled_whole": sum(parse_preference(a) is not None for a, _ in rows),
        "labelled_cut": sum(parse_preference(b) is not None for _, b in rows),
        "whole_chars_of_cut_answers": sorted(len(a) for a, b in rows if len(b) < len(a)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("whole", type=Path, help="the recording without a limit on the answers")
    parser.add_argument("cut", type=Path, help="the recording with llm_max_tokens")
    parser.add_argument("--out", type=Path, help="write the counts here (JSON) as well as to stdout")
    args = parser.parse_args()
    result = compare(args.whole, args.cut)
    print(json.dumps(result, indent=2))
    if args.out:
        write_json_atomic(args.out, result)


if __name__ == "__main__":
    main()
