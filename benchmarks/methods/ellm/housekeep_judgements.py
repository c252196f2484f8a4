"""What ELLM's Housekeep variant rewards: an LLM's yes/no answers to "does this object belong on this
receptacle?" against Housekeep's annotations, on a seeded sample of the (object, receptacle) pairs of a
split's scenes (half correct, half not: correct pairs are about 6% of all), with precision, recall and
accuracy of "yes", and the precision the same answers would have at the population's share of correct
pairs. With ``--method score`` (the original's way: P(" Yes") against P(" No"), one forward per pair) it
also shows how the numbers move with the yes-threshold.

Answers are appended to ``results/housekeep/<model>_<method>.answers.jsonl`` as they come: a killed run
continues where it stopped, and a larger ``--pairs`` (same seed) reuses the answers it has. Writes
``<model>_<method>.json`` and ``.md`` next to it.

Run: ``python benchmarks/methods/ellm/housekeep_judgements.py --pairs 1000`` (needs the Housekeep data and
``textagents download smollm2``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from textagents.bench.store import write_json_atomic, write_text_atomic
from textagents.jsonl import append_records, read_jsonl
from textagents.llm.base import LLMBackend
from textagents.llm.record import wrap_backend
from textagents.methods.ellm.judgements import Pair, judgement_metrics, sample_pairs, scene_pairs
from textagents.methods.ellm.placement import METHODS, PlacementJudge
from textenvs.envs.housekeep.annotations import SPLITS, load_annotations, load_splits
from textenvs.envs.housekeep.scenes import load_scene

OUT = Path(__file__).resolve().parent / "results" / "housekeep"
SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def backend_for(args: argparse.Namespace) -> LLMBackend:
    def build() -> LLMBackend:
        if args.base_url is not None:
            from textagents.llm import OpenAIBackend

            return OpenAIBackend(args.model, base_url=args.base_url, api_key_env=args.api_key_env)
        from textagents.llm.transformers_backend import TransformersBackend

        return TransformersBackend(args.model, batch_size=args.batch_size)

    return wrap_backend(build, args.llm_record, args.llm_replay)


def answer_pairs(judge: PlacementJudge, pairs: list[Pair], answers: Path, batch_size: int) -> list[dict[str, Any]]:
    """The answer records of ``pairs``: those in ``answers`` already, the others asked ``batch_size`` at a
    time and appended there."""
    done = {(r["object"], r["receptacle"]): r for r in read_jsonl(answers)[0]} if answers.exists() else {}
    todo = [p for p in pairs if (p.object, p.receptacle) not in done]
    bar = tqdm(total=len(pairs), initial=len(pairs) - len(todo), unit="pair", dynamic_ncols=True)
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        judgements = judge.judge([(p.object, p.receptacle) for p in batch])
        records = [
            {"object": p.object, "receptacle": p.receptacle, "correct": p.correct, **vars(j)}
            for p, j in zip(batch, judgements, strict=True)
        ]
        append_records(answers, records)
        done.update(((r["object"], r["receptacle"]), r) for r in records)
        bar.update(len(batch))
    bar.close()
    return [done[(p.object, p.receptacle)] for p in pairs]


def markdown(result: dict[str, Any]) -> str:
    m = result["metrics"]

    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    lines = [
        f"# ELLM Housekeep: placement judgements of `{result['model']}` ({result['method']})",
        "",
        f"{m['pairs']} (object, receptacle) pairs of the {result['split']} scenes (seed {result['seed']}, "
        f"{'half correct, half not' if result['balanced'] else 'uniform'}), out of {result['population']} "
        f"({result['positive_rate']:.1%} correct; {result['ambiguous']} ambiguous names). Truth: Housekeep's "
        "annotations (at least 6 of 10 annotators). Yes: the LLM's answer to our version of ELLM's prompt.",
        "",
        "| precision | recall | accuracy | F1 | yes rate | precision at the population's rate | TP | FP | FN | TN |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {cell(m['precision'])} | {cell(m['recall'])} | {cell(m['accuracy'])} | {cell(m['f1'])} "
        f"| {cell(m['yes_rate'])} | {cell(m.get('precision_at_positive_rate'))} | {m['true_positive']} "
        f"| {m['false_positive']} | {m['false_negative']} | {m['true_negative']} |",
    ]
    if result["method"] == "generate":
        lines += ["", f"Answers that said neither yes nor no (counted as no): {result['unparseable']}."]
    if result.get("sweep"):
        lines += [
            "",
            'Yes when P(yes) > threshold (P renormalised over " Yes" and " No"; the original\'s default 0.5):',
            "",
            "| threshold | precision | recall | accuracy | yes rate |",
            "|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {t} | {cell(s['precision'])} | {cell(s['recall'])} | {cell(s['accuracy'])} | {cell(s['yes_rate'])} |"
            for t, s in result["sweep"].items()
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--base-url", help="an OpenAI-compatible server to ask instead of a local model")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--method", choices=METHODS, default="score")
    parser.add_argument("--pairs", type=int, default=1000, help="pairs to ask about (default 1000)")
    parser.add_argument("--split", choices=SPLITS, default="train", help="whose scenes and objects (default train)")
    parser.add_argument("--uniform", action="store_true", help="sample pairs uniformly instead of half correct")
    parser.add_argument("--threshold", type=float, default=0.5, help="score: yes when P(yes) > threshold")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--llm-record")
    parser.add_argument("--llm-replay")
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("--pairs must be >= 1")

    annotations, splits = load_annotations(), load_splits()
    scenes = [load_scene(name) for name in splits.scenes[args.split]]
    population = scene_pairs(scenes, annotations, splits.episode_objects(args.split, "seen"))
    pairs = sample_pairs(population.pairs, args.pairs, args.seed, balanced=not args.uniform)
    judge = PlacementJudge(backend_for(args), method=args.method, threshold=args.threshold)
    args.out.mkdir(parents=True, exist_ok=True)
    tag = f"{Path(args.model).name}_{args.method}"
    records = answer_pairs(judge, pairs, args.out / f"{tag}.answers.jsonl", args.batch_size)

    truth = [r["correct"] for r in records]
    rate = None if args.uniform else population.positive_rate
    scored = args.method == "score"
    said_yes = [r["p_yes"] > args.threshold for r in records] if scored else [r["yes"] for r in records]
    result = {
        "model": args.model,
        "method": args.method,
        "split": args.split,
        "seed": args.seed,
        "balanced": not args.uniform,
        "threshold": args.threshold if scored else None,
        "population": len(population.pairs),
        "positive_rate": population.positive_rate,
        "ambiguous": population.ambiguous,
        "metrics": judgement_metrics(truth, said_yes, rate),
        "unparseable": sum(not r["parsed"] for r in records),
        "sweep": {t: judgement_metrics(truth, [r["p_yes"] > t for r in records]) for t in SWEEP} if scored else {},
    }
    write_json_atomic(args.out / f"{tag}.json", result)
    write_text_atomic(args.out / f"{tag}.md", markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
