"""Segmentation metrics against plain-NumPy confusion-matrix formulas written out here, for
class-index and one-hot inputs, 2-D and 3-D maps, absent classes, ignore_index and with or
without the background class, each per batch, accumulated, merged and through state_dict;
then errors."""

from __future__ import annotations

from functools import partial

import dlfree as dl
from dlfree.metrics import DiceScore, GeneralizedDiceScore, MeanIoU, PixelAccuracy

import numpy as np
import pytest

from support.metrics import check_streaming

C = 4
IGNORE = 255
KINDS = ["random", "absent_class", "ignore", "3d"]


def make_batches(kind, rng, sizes=(2, 1, 3)):
    """(preds, target) class-index maps (N, 5, 6), or (N, 3, 4, 5) for "3d"."""
    batches = []
    for n in sizes:
        shape = (n, 3, 4, 5) if kind == "3d" else (n, 5, 6)
        high = C - 1 if kind == "absent_class" else C  # class C - 1 in neither
        target = rng.integers(0, high, shape)
        preds = np.where(rng.random(shape) < 0.6, target, rng.integers(0, high, shape))
        if kind == "ignore":
            target = np.where(rng.random(shape) < 0.2, IGNORE, target)
        batches.append((preds, target))
    return batches


def one_hot(labels):
    return np.moveaxis(np.eye(C, dtype=np.int64)[labels], -1, 1)


def reference_counts(preds, target, include_background):
    """Per-class tp, fp, fn from the confusion matrix (rows: target, columns: preds)."""
    keep = target != IGNORE
    confusion = np.zeros((C, C), dtype=np.int64)
    np.add.at(confusion, (target[keep], preds[keep]), 1)
    tp = np.diag(confusion)
    fp, fn = confusion.sum(axis=0) - tp, confusion.sum(axis=1) - tp
    first = 0 if include_background else 1
    return tp[first:], fp[first:], fn[first:]


FORMULAS = {  # (numerator, denominator) from tp, fp, fn
    "dice": lambda tp, fp, fn: (2 * tp, 2 * tp + fp + fn),
    "iou": lambda tp, fp, fn: (tp, tp + fp + fn),
    "accuracy": lambda tp, fp, fn: (tp, tp + fn),
}
METRICS = {"dice": DiceScore, "iou": MeanIoU, "accuracy": PixelAccuracy}


def reference_score(name, average, tp, fp, fn):
    """Per class: NaN where the denominator is 0; macro: mean over the rest; weighted: by
    target pixels (tp + fn) over the rest; micro: the formula on summed counts."""
    formula = FORMULAS[name]
    if average == "micro":
        num, den = formula(tp.sum(), fp.sum(), fn.sum())
        return num / den if den else np.nan
    num, den = (np.asarray(v, dtype=np.float64) for v in formula(tp, fp, fn))
    score = np.full(den.shape, np.nan)
    np.divide(num, den, out=score, where=den > 0)
    if average == "none":
        return score
    defined = den > 0
    weights = (tp + fn) * defined if average == "weighted" else defined.astype(np.float64)
    return (weights[defined] * score[defined]).sum() / weights.sum() if weights.sum() else np.nan


def formats(kind):
    return ["index"] if kind == "ignore" else ["index", "one-hot"]


def segmentation_cases():
    return [pytest.param(kind, fmt, id=f"{kind}-{fmt}") for kind in KINDS for fmt in formats(kind)]


def streamed(kind, fmt, rng):
    """Batches in the input format, and the oracle's view of them as index maps."""
    batches = make_batches(kind, rng)
    if fmt == "one-hot":
        batches = [(one_hot(p), one_hot(t)) for p, t in batches]
    return batches


def as_index(fmt, preds, target):
    return (preds.argmax(axis=1), target.argmax(axis=1)) if fmt == "one-hot" else (preds, target)


@pytest.mark.parametrize("include_background", [True, False])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
@pytest.mark.parametrize("kind, fmt", segmentation_cases())
@pytest.mark.parametrize("name", METRICS)
def test_segmentation_metrics_match_the_confusion_matrix_formulas(
        name, kind, fmt, average, include_background, rng):
    ignore = IGNORE if kind == "ignore" else None
    build = partial(METRICS[name], C, include_background=include_background, average=average,
                    ignore_index=ignore, input_format=fmt)

    def oracle(preds, target):
        counts = reference_counts(*as_index(fmt, preds, target), include_background)
        return reference_score(name, average, *counts)

    check_streaming(build, streamed(kind, fmt, rng), oracle)


def reference_generalized_dice(weight_type, tp, fp, fn):
    """2 sum w tp / sum w (2 tp + fp + fn), w from the target volume; a class absent from
    the target takes the largest finite weight."""
    volume = (tp + fn).astype(np.float64)
    power = {"square": 2, "simple": 1, "linear": 0}[weight_type]
    weights = np.zeros_like(volume)
    present = volume > 0
    weights[present] = 1.0 / volume[present] ** power
    weights[~present] = weights[present].max() if present.any() else 0.0
    den = (weights * (2 * tp + fp + fn)).sum()
    return 2 * (weights * tp).sum() / den if den else np.nan


@pytest.mark.parametrize("include_background", [True, False])
@pytest.mark.parametrize("weight_type", ["square", "simple", "linear"])
@pytest.mark.parametrize("kind, fmt", segmentation_cases())
def test_generalized_dice_matches_the_written_out_formula(kind, fmt, weight_type,
                                                          include_background, rng):
    build = partial(GeneralizedDiceScore, C, include_background=include_background,
                    weight_type=weight_type, ignore_index=IGNORE if kind == "ignore" else None,
                    input_format=fmt)

    def oracle(preds, target):
        counts = reference_counts(*as_index(fmt, preds, target), include_background)
        return reference_generalized_dice(weight_type, *counts)

    check_streaming(build, streamed(kind, fmt, rng), oracle)


def test_one_hot_pixels_may_hold_several_classes(rng):
    preds, target = rng.integers(0, 2, (2, C, 4, 4)), rng.integers(0, 2, (2, C, 4, 4))
    tp = (preds & target).sum(axis=(0, 2, 3))
    union = (preds | target).sum(axis=(0, 2, 3))
    value = MeanIoU(C, average=None)(preds, target)
    np.testing.assert_allclose(value.numpy(), tp / union, rtol=1e-6)


@pytest.mark.parametrize("build, message", [
    (lambda: DiceScore(0), "num_classes must be an int >= 1"),
    (lambda: DiceScore(3, input_format="probs"),
     "unknown input_format 'probs'; valid: 'one-hot', 'index'"),
    (lambda: MeanIoU(3, average="median"), "unknown average 'median'"),
    (lambda: MeanIoU(3, ignore_index=255), "applies to input_format='index' only"),
    (lambda: PixelAccuracy(1, include_background=False), "needs num_classes >= 2"),
    (lambda: GeneralizedDiceScore(3, weight_type="cubic"), "unknown weight_type 'cubic'"),
])
def test_bad_arguments_are_named(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("metric, preds, target, error, message", [
    (DiceScore(3, input_format="index"), np.zeros((2, 4, 4), int), np.zeros((2, 4, 5), int),
     dl.ShapeError, r"preds shape \(2, 4, 4\) and target shape \(2, 4, 5\)"),
    (DiceScore(3), np.zeros((2, 2, 4), int), np.zeros((2, 2, 4), int), dl.ShapeError,
     r"must be \(N, 3, \.\.\.\), got \(2, 2, 4\)"),
    (MeanIoU(3, input_format="index"), np.full((1, 2, 2), 3), np.zeros((1, 2, 2), int),
     ValueError, r"preds holds values such as \[3\]; valid: integers in \[0, 2\]"),
    (MeanIoU(3, input_format="index", ignore_index=255), np.zeros((1, 2, 2), int),
     np.full((1, 2, 2), 7), ValueError, r"target holds values such as \[7\].*ignore_index=255"),
    (MeanIoU(3, input_format="index"), np.zeros((1, 2, 2)), np.zeros((1, 2, 2), int),
     dl.DTypeError, "preds must be integer or bool, got dtype float64"),
])
def test_bad_inputs_are_named(metric, preds, target, error, message):
    with pytest.raises(error, match=message):
        metric.update(preds, target)
