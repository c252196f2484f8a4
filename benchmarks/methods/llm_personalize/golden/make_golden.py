"""Golden outputs of LLM-Personalize's original code (github.com/donggehan/codellmpersonalize @ 47844d2, MIT)
for the tests of our re-implementation: its plan splitter and step parser, and its self-training selection.

The original modules import habitat, so the few pure functions the tests need are copied below, each with
its file and lines; the copies keep the original's statements and only drop what needs the simulator (the
key translator and the "observed" check of ``postprocess``, logging). Not imported by the package.

Run (needs pandas, as the original's notebooks do):
``python benchmarks/methods/llm_personalize/golden/make_golden.py [DATA_DIR]``, DATA_DIR being the
reference data (``../shared/data``); writes ``tests/textagents/methods/golden/llm_personalize_*.json``.
"""

# ruff: noqa: RUF015  (the original's list(...)[0] is kept as written)
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[4]
OUT = ROOT / "tests" / "textagents" / "methods" / "golden"
COMMIT = "47844d2e56e134f3f140f274ff998833d202cdc5"

# cos_eor/configs/local/igib_v2_nav_sp.yaml:242 (single.llm_model.openai.prompt.prefix) and :186
# (single.max_steps_per_prompt)
PREFIX = "step 1:"
MAX_STEPS_PER_PROMPT = 10


def original_plan_steps(response: str) -> list[str]:
    """cos_eor/policy/llm_planner.py:265-287, ``LLMPlanModule._process_llm_response_to_plan`` in its
    ``multistep`` mode (the paper's), the prompt-threshold branch (:274-277) left out."""
    top_nl_response = PREFIX + response
    top_nl_response = top_nl_response.lower().replace(" :", ":")
    pattern = r"\n|step \d+\:|step\d+\:"
    steps = [s.strip().strip(".").strip(",") for s in re.split(pattern, top_nl_response)]
    steps = [s for s in steps if len(s) > 0]
    return steps[:MAX_STEPS_PER_PROMPT]


def original_parse_step(step: str) -> dict | None:
    """cos_eor/policy/llm_planner.py:31-73, ``PlanModule.postprocess`` up to the match: which pattern
    matched (tried in this order) and the names it read, or None where it raises "action not found"
    (:74-75). Left out: the primitive actions (:47-52, not allowed in the paper's config), the
    not-yet-observed check of ``go to`` (:57-59) and the key translation (:77-95), which need the env."""
    PATTERNS = {
        "place": r"place (.+) on (.+)",
        "pick": r"pick up (.+)",
        "nav": r"go to (.+)",
        "look": r"look at (.+)",
        "punctuation": r"[\"\'\;]",
    }
    step = step.lower()
    target_obj = None
    if re.match(PATTERNS["nav"], step):
        action = "nav"
        match = re.match(PATTERNS["nav"], step)
        target = re.sub(PATTERNS["punctuation"], "", match.group(1).strip())
    elif re.match(PATTERNS["look"], step):
        action = "look"
        match = re.match(PATTERNS["look"], step)
        target = re.sub(PATTERNS["punctuation"], "", match.group(1).strip())
    elif re.match(PATTERNS["pick"], step):
        action = "pick"
        match = re.match(PATTERNS["pick"], step)
        target = re.sub(PATTERNS["punctuation"], "", match.group(1).strip())
    elif re.match(PATTERNS["place"], step):
        action = "place"
        match = re.match(PATTERNS["place"], step)
        target_obj = re.sub(PATTERNS["punctuation"], "", match.group(1).strip())
        target = re.sub(PATTERNS["punctuation"], "", match.group(2).strip())
    else:
        return None
    return {"action": action, "target_obj": target_obj, "target": target}


def compile_steps(steps: list[str]) -> str:
    """experiments/annotate_gpt3_pair.ipynb, cell 3 (the same in annotate_human_demo_pair.ipynb, cell 3)."""
    nl = "\n".join(f"step {index}: {step}" for index, step in enumerate(steps, start=1))
    nl_without_prefix = nl.replace("step 1: ", "")
    return nl_without_prefix


def original_self_training_selection(records: list[dict]) -> list[int]:
    """experiments/annotate_gpt3_pair.ipynb, cell 8 (records that raised the correct count) and cell 11
    (de-duplication by the first moved object, its receptacles before and after, and the correct set
    before; pandas keeps the first record of each group, groups sorted by key). Returns the kept records'
    ``id``s in the order the notebook writes them."""
    finetune_records = [log for log in records if log["annotation"]["diff_correct_loc"] > 0]
    df_finetune = pd.DataFrame(finetune_records)
    df_finetune["object_moved"] = df_finetune.apply(lambda x: list(x["outcome"]["objects_moved"].keys())[0], axis=1)
    df_finetune["rec_before"] = df_finetune.apply(lambda x: list(x["outcome"]["objects_moved"].values())[0][0], axis=1)
    df_finetune["rec_after"] = df_finetune.apply(lambda x: list(x["outcome"]["objects_moved"].values())[0][1], axis=1)
    # str(set(...)) in the original; sorted here so that the key does not depend on the hash seed
    df_finetune["correct_before"] = df_finetune.apply(lambda x: str(sorted(set(x["correct_objects"]["start"]))), axis=1)
    df_remove_duplicate = (
        df_finetune.groupby(["object_moved", "rec_before", "rec_after", "correct_before"]).first().reset_index()
    )
    return df_remove_duplicate.apply(lambda x: x["id"], axis=1).to_list()


# ---------------------------------------------------------------------- inputs
PLANS = [
    "go to kitchen 0\nstep 2: look at kitchen 0 counter 18",
    "go to kitchen 0 and place cup 1 on kitchen 0",
    "1. go to bedroom 0\n2. pick up cup 1",
    "- pick up apple 1\n- place apple 1 on bedroom 0 shelf 9",
    "Go To 'Apple 1'; \nstep 2: Pick up \"apple 1\"",
    "place apple 1 on kitchen 0 table 3.",
    "look at apple 1, then pick up apple 1",
    "pick up the apple 1",
    "step 1: go to bathroom 0",
    "go to bathroom 0\nStep 2 : go to bedroom 0",
    "go to bathroom 0 step3:go to corridor 0",
    "\n".join(f"step {i}: go to room {i}" for i in range(2, 14)),
    "",
    "\n\n",
    "mission complete",
    "Mission complete.",
    "I will go to kitchen 0 first",
    "place cup 1 on shelf 2 on table 3",
    "go to ' kitchen 0';",
    "pick up saucer 1\nstep 2: place saurcer 1 on kitchen 0 counter 18",
    "  go to   kitchen 0  ",
    "go to\nstep 2: go to ",
    "look at: kitchen 0 table 7",
    "go to bedroom 0 step 2: pick up camera 1",
    "goto kitchen 0",
    "place apple 1 on",
    "step 1: step 2: go to living room 0",
    "go to kitchen 0\r\nstep 2: look at kitchen 0 sink 2",
    "pick up cup 1; place cup 1 on kitchen 0 sink 2",
    "Place Tennis Ball 1 On Bedroom 0 Shelf 9,",
    "**go to** kitchen 0",
    "go to kitchen 0 to pick up cup 1",
]
RECORDED = ("il_pairs_pomaria_2_train.jsonl", "st_iter1_pairs_pomaria_2_train.jsonl")
RECORDED_PER_FILE = 4


def recorded_plans(data_dir: Path) -> list[str]:
    """The first plans (assistant messages) of the paper's recorded fine-tuning pairs."""
    plans = []
    for name in RECORDED:
        lines = (data_dir / "llm_personalize" / name).read_text().splitlines()[:RECORDED_PER_FILE]
        plans += [json.loads(line)["messages"][2]["content"] for line in lines]
    return plans


STEP_LISTS = [
    ["go to bathroom 0", "go to bedroom 0"],
    ["go to 'apple 1'", "look at apple 1", "pick up apple 1; ok"],
    ["mission complete"],
    [f"go to room {i}" for i in range(12)],
]


def _record(id_: int, moved: dict[str, list[str]], correct_start: list[str], diff: int) -> dict:
    """One planning call as the original's logs hold it (only the fields the selection reads)."""
    return {
        "id": id_,
        "outcome": {"objects_moved": moved},
        "correct_objects": {"start": correct_start},
        "annotation": {"diff_correct_loc": diff},
    }


RECORDS = [
    _record(0, {"cup 1": ["table 1", "shelf 2"]}, [], 1),
    _record(1, {"cup 1": ["table 1", "shelf 2"], "pan 1": ["sink 3", "stove 4"]}, [], 2),  # first move as 0's
    _record(2, {"pan 1": ["sink 3", "stove 4"], "cup 1": ["table 1", "shelf 2"]}, [], 1),  # first: pan 1
    _record(3, {"cup 1": ["table 1", "shelf 2"]}, ["pan 1"], 1),  # another correct set before
    _record(4, {"cup 1": ["table 1", "agent"]}, [], 0),  # picked only: no new correct object
    _record(5, {"cup 1": ["table 1", "shelf 2"]}, [], 1),  # a repeat of 0
    _record(6, {"mug 1": ["agent", "shelf 2"]}, ["cup 1"], 1),  # held when the plan began
    _record(7, {"mug 1": ["bed 5", "bed 5"], "cup 1": ["table 1", "shelf 2"]}, [], 1),  # put back first
    _record(8, {"cup 1": ["shelf 2", "table 1"]}, ["cup 1"], -1),  # lowered the count
]


def main() -> None:
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
    source = {"repository": "donggehan/codellmpersonalize", "commit": COMMIT, "made_by": Path(__file__).name}
    plans = PLANS + recorded_plans(data_dir)
    parser = [
        {"answer": p, "steps": [{"text": s, "parsed": original_parse_step(s)} for s in original_plan_steps(p)]}
        for p in plans
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "llm_personalize_parser.json").write_text(json.dumps({**source, "plans": parser}, indent=1) + "\n")
    self_training = {
        **source,
        "targets": [{"steps": s, "assistant": compile_steps(s)} for s in STEP_LISTS],
        "records": RECORDS,
        "kept": original_self_training_selection(RECORDS),
    }
    (OUT / "llm_personalize_self_training.json").write_text(json.dumps(self_training, indent=1) + "\n")


if __name__ == "__main__":
    main()
