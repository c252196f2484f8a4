"""How well an LLM's yes/no placement answers agree with Housekeep's annotations: the (object, receptacle)
pairs of a split's scenes with their ground truth, a seeded sample of them, and precision / recall /
accuracy of "yes" against "correct".

A pair is named as the reward wrapper names it (object category, receptacle room type and category). It is
correct when at least one receptacle of that name in one of the scenes is a correct receptacle of the
object (Housekeep's rule: at least 6 of 10 annotators rank the room|receptacle pair positive). A few names
cover receptacles that differ (a "bottom cabinet" may be a ``bottom_cabinet_no_top``, covered by the
annotations only in some scenes): those pairs are counted as ``ambiguous``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from textenvs.envs.housekeep.annotations import Annotations
from textenvs.envs.housekeep.scenes import Scene


@dataclass(frozen=True)
class Pair:
    """An (object, receptacle) question and its ground truth."""

    object: str
    receptacle: str
    correct: bool


@dataclass(frozen=True)
class PairSet:
    """Every pair of some scenes (sorted by name) and how many of them are ambiguous."""

    pairs: tuple[Pair, ...]
    ambiguous: int

    @property
    def positive_rate(self) -> float:
        return float(np.mean([p.correct for p in self.pairs])) if self.pairs else 0.0


def scene_pairs(scenes: Sequence[Scene], annotations: Annotations, objects: Sequence[str]) -> PairSet:
    """The pairs of ``objects`` (annotation categories) with the named receptacles of ``scenes``."""
    columns = [annotations.object_index[o] for o in objects]
    correct = annotations.correct
    seen: dict[tuple[str, str], set[bool]] = {}
    for scene in scenes:
        for receptacle in scene.receptacles:
            if receptacle.room is None:
                continue
            pairs = list(receptacle.pairs)
            fits = correct[pairs][:, columns].any(0) if pairs else np.zeros(len(columns), bool)
            for obj, fit in zip(objects, fits, strict=True):
                seen.setdefault((obj.replace("_", " "), receptacle.kind_label), set()).add(bool(fit))
    pairs = tuple(Pair(obj, rec, any(values)) for (obj, rec), values in sorted(seen.items()))
    return PairSet(pairs, sum(len(values) > 1 for values in seen.values()))


def sample_pairs(pairs: Sequence[Pair], count: int, seed: int, balanced: bool = True) -> list[Pair]:
    """``count`` pairs drawn without replacement (all of them when fewer). ``balanced``: half correct and half
    not (as far as each side has pairs), since correct pairs are rare (about 6% in the training scenes)."""
    rng = np.random.default_rng(seed)
    if not balanced:
        chosen = rng.permutation(len(pairs))[:count]
        return [pairs[i] for i in chosen]
    positive = [p for p in pairs if p.correct]
    negative = [p for p in pairs if not p.correct]
    take_positive = min(len(positive), max(count // 2, count - len(negative)))
    take_negative = min(len(negative), count - take_positive)
    picked = [positive[i] for i in rng.permutation(len(positive))[:take_positive]]
    picked += [negative[i] for i in rng.permutation(len(negative))[:take_negative]]
    return [picked[i] for i in rng.permutation(len(picked))]


def judgement_metrics(correct: Sequence[bool], said_yes: Sequence[bool], positive_rate: float | None = None) -> dict:
    """Confusion counts, precision and recall of "yes" for "correct", accuracy, F1 and the share of yes.
    ``positive_rate``: the share of correct pairs in the whole population, when the sample was balanced; then
    ``precision_at_positive_rate`` is the precision the same recall and false-positive rate give there.
    Undefined ratios are None."""
    truth, yes = np.asarray(correct, bool), np.asarray(said_yes, bool)
    if truth.shape != yes.shape:
        raise ValueError(f"{truth.size} ground truths but {yes.size} answers")
    tp, fp = int((truth & yes).sum()), int((~truth & yes).sum())
    fn, tn = int((truth & ~yes).sum()), int((~truth & ~yes).sum())
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    metrics = {
        "pairs": int(truth.size),
        "true_positive": tp,
        "false_positive": fp,
        "false_negative": fn,
        "true_negative": tn,
        "precision": precision,
        "recall": recall,
        "accuracy": _ratio(tp + tn, truth.size),
        "f1": _ratio(2 * precision * recall, precision + recall) if precision is not None and recall else None,
        "yes_rate": _ratio(tp + fp, truth.size),
    }
    if positive_rate is not None:
        false_positive_rate = _ratio(fp, fp + tn)
        if recall is None or false_positive_rate is None:
            metrics["precision_at_positive_rate"] = None
        else:
            hits = recall * positive_rate
            metrics["precision_at_positive_rate"] = _ratio(hits, hits + false_positive_rate * (1 - positive_rate))
    return metrics


def _ratio(a: float, b: float) -> float | None:
    return float(a / b) if b else None
