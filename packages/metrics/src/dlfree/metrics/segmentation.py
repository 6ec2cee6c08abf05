"""Semantic-segmentation metrics over class maps: Dice, mean IoU, pixel accuracy and the
generalized Dice score, from per-class pixel counts pooled over the whole dataset."""

from __future__ import annotations

import numbers

import dlfree as dl

import numpy as np

from ._math import safe_divide
from .metric import Metric

FORMATS = ("one-hot", "index")
AVERAGES = ("micro", "macro", "weighted", "none")
WEIGHT_TYPES = ("square", "simple", "linear")
NAN = float("nan")


class SegmentationMetric(Metric):
    """Base of the segmentation metrics: per-class tp, fp and fn pixel counts summed over
    every image seen (dataset-level scores, as segmentation benchmarks report mIoU).

    input_format: "one-hot" (preds and target (N, C, ...) of 0/1, as torchmetrics) or
    "index" (class-index maps (N, ...)); `ignore_index` (index format only) drops the pixels
    whose target equals it. include_background=False leaves class 0 out of the result.
    average: "micro" (counts pooled over classes), "macro" (mean over classes), "weighted"
    (by each class's target pixels) or "none"/None (per class). A class whose score has a
    zero denominator (for Dice and IoU: absent from both preds and target) is NaN in the
    per-class result and left out of "macro" and "weighted", as torchmetrics does.
    """

    def __init__(self, num_classes: int, include_background: bool = True,
                 average: str | None = "macro", ignore_index: int | None = None,
                 input_format: str = "one-hot"):
        super().__init__()
        name = type(self).__name__
        if not isinstance(num_classes, numbers.Integral) or isinstance(num_classes, bool) or \
                num_classes < 1:
            raise ValueError(f"{name}: num_classes must be an int >= 1, got {num_classes!r}")
        if input_format not in FORMATS:
            raise ValueError(f"{name}: unknown input_format {input_format!r}; valid: "
                             f"{', '.join(map(repr, FORMATS))}")
        average = "none" if average is None else average
        if average not in AVERAGES:
            raise ValueError(f"{name}: unknown average {average!r}; valid: "
                             f"{', '.join(map(repr, AVERAGES))} or None")
        if ignore_index is not None and (input_format != "index" or
                                         not isinstance(ignore_index, numbers.Integral)):
            raise ValueError(f"{name}: ignore_index must be None or an int, and applies to "
                             f"input_format='index' only; got ignore_index={ignore_index!r} "
                             f"with input_format={input_format!r}")
        if not include_background and num_classes < 2:
            raise ValueError(f"{name}: include_background=False needs num_classes >= 2")
        self.num_classes, self.include_background = int(num_classes), bool(include_background)
        self.average, self.ignore_index, self.input_format = average, ignore_index, input_format
        for state in ("tp", "fp", "fn"):
            self.add_state(state, np.zeros(self.num_classes, dtype=np.int64), "sum")

    def update(self, preds, target) -> None:
        preds, target = self.as_arrays(preds, target)
        xp = self._device.xp
        if preds.shape != target.shape:
            raise dl.ShapeError(f"{type(self).__name__}: preds shape {tuple(preds.shape)} and "
                                f"target shape {tuple(target.shape)} must be equal")
        counts = self._count_index(preds, target, xp) if self.input_format == "index" else \
            self._count_one_hot(preds, target, xp)
        self.tp, self.fp, self.fn = (old + new for old, new in
                                     zip((self.tp, self.fp, self.fn), counts))

    def _check_labels(self, what: str, array, high: int, xp, ignore=None) -> None:
        if array.dtype.kind not in "iub":
            raise dl.DTypeError(f"{type(self).__name__}: {what} must be integer or bool, got "
                                f"dtype {array.dtype}")
        bad = (array < 0) | (array >= high)
        if ignore is not None:
            bad &= array != ignore
        if bool(xp.any(bad)):
            found = sorted(set(array[bad][:5].tolist()))
            raise ValueError(f"{type(self).__name__}: {what} holds values such as {found}; "
                             f"valid: integers in [0, {high - 1}]" +
                             ("" if ignore is None else f" or ignore_index={ignore}"))

    def _count_index(self, preds, target, xp):
        c = self.num_classes
        self._check_labels("target", target, c, xp, self.ignore_index)
        self._check_labels("preds", preds, c, xp)
        preds, target = preds.reshape(-1).astype(xp.int64), target.reshape(-1).astype(xp.int64)
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            preds, target = preds[keep], target[keep]
        confusion = xp.bincount(target * c + preds, minlength=c * c).reshape(c, c)
        tp = xp.diagonal(confusion)
        return tp, confusion.sum(axis=0) - tp, confusion.sum(axis=1) - tp

    def _count_one_hot(self, preds, target, xp):
        if preds.ndim < 2 or preds.shape[1] != self.num_classes:
            raise dl.ShapeError(f"{type(self).__name__}: one-hot preds and target must be "
                                f"(N, {self.num_classes}, ...), got {tuple(preds.shape)}")
        self._check_labels("preds", preds, 2, xp)
        self._check_labels("target", target, 2, xp)
        preds, target = preds.astype(bool), target.astype(bool)
        axes = (0, *range(2, preds.ndim))
        return ((preds & target).sum(axis=axes), (preds & ~target).sum(axis=axes),
                (~preds & target).sum(axis=axes))

    def _counts(self):
        first = 0 if self.include_background else 1
        return self.tp[first:], self.fp[first:], self.fn[first:]

    def _score(self, tp, fp, fn, xp):
        """Per-class (or pooled) score from the counts, NaN where undefined."""
        raise NotImplementedError

    def compute(self):
        xp = self._device.xp
        tp, fp, fn = self._counts()
        if self.average == "micro":
            return self.as_result(self._score(tp.sum(), fp.sum(), fn.sum(), xp))
        score = self._score(tp, fp, fn, xp)
        if self.average == "none":
            return self.as_result(score)
        defined = ~xp.isnan(score)
        weights = defined * ((tp + fn) if self.average == "weighted" else 1.0)
        return self.as_result(safe_divide((weights * xp.where(defined, score, 0.0)).sum(),
                                        weights.sum(), xp, NAN))


class DiceScore(SegmentationMetric):
    """The Dice coefficient (F1) per class, 2 tp / (2 tp + fp + fn); see
    `SegmentationMetric` (average defaults to "macro")."""

    def _score(self, tp, fp, fn, xp):
        return safe_divide(2 * tp, 2 * tp + fp + fn, xp, NAN)


class MeanIoU(SegmentationMetric):
    """Intersection over union per class, tp / (tp + fp + fn), averaged to the mean IoU; see
    `SegmentationMetric` (average defaults to "macro")."""

    def _score(self, tp, fp, fn, xp):
        return safe_divide(tp, tp + fp + fn, xp, NAN)


class PixelAccuracy(SegmentationMetric):
    """The fraction of correctly labelled pixels (average "micro", the default); per class
    tp / (tp + fn), NaN for a class absent from the target, so "macro" is the mean class
    accuracy. See `SegmentationMetric`."""

    def __init__(self, num_classes: int, include_background: bool = True,
                 average: str | None = "micro", ignore_index: int | None = None,
                 input_format: str = "one-hot"):
        super().__init__(num_classes, include_background, average, ignore_index, input_format)

    def _score(self, tp, fp, fn, xp):
        return safe_divide(tp, tp + fn, xp, NAN)


class GeneralizedDiceScore(SegmentationMetric):
    """The generalized Dice score (Sudre et al., 2017): 2 sum_c w_c tp_c / sum_c w_c
    (2 tp_c + fp_c + fn_c), one number for all classes, with class weights from the target
    volume v_c = tp_c + fn_c: 1/v_c^2 ("square"), 1/v_c ("simple") or 1 ("linear"). A class
    absent from the target (infinite weight) gets the largest finite weight, as
    torchmetrics does. Other arguments as `SegmentationMetric` (no averaging)."""

    def __init__(self, num_classes: int, include_background: bool = True,
                 weight_type: str = "square", ignore_index: int | None = None,
                 input_format: str = "one-hot"):
        if weight_type not in WEIGHT_TYPES:
            raise ValueError(f"GeneralizedDiceScore: unknown weight_type {weight_type!r}; "
                             f"valid: {', '.join(map(repr, WEIGHT_TYPES))}")
        self.weight_type = weight_type
        super().__init__(num_classes, include_background, "macro", ignore_index, input_format)

    def compute(self):
        xp = self._device.xp
        tp, fp, fn = (c.astype(xp.float64) for c in self._counts())
        volume = tp + fn
        power = {"square": 2.0, "simple": 1.0, "linear": 0.0}[self.weight_type]
        present = volume > 0
        weights = safe_divide(1.0, volume ** power, xp)
        largest = weights.max() if bool(xp.any(present)) else 0.0
        weights = xp.where(present, weights, largest)
        return self.as_result(safe_divide(2.0 * (weights * tp).sum(),
                                        (weights * (2.0 * tp + fp + fn)).sum(), xp, NAN))
