"""The true/false positive/negative counts behind accuracy, precision, recall, F-scores,
specificity, Hamming distance and the Jaccard index, and their averaging over classes."""

from __future__ import annotations

import numbers

import numpy as np

from .._math import safe_divide
from ..metric import Metric
from ._inputs import (
    binary_labels,
    check_average,
    check_ignore_index,
    check_task,
    check_threshold,
    check_top_k,
    multiclass_inputs,
    multilabel_inputs,
)

AVERAGES = ("micro", "macro", "weighted", "none")


class StatScoresMetric(Metric):
    """Base of the metrics computed from per-class tp, fp, tn, fn counts (summed states).

    task: "binary" (preds are probabilities, logits or 0/1 labels; positive when the
    probability exceeds `threshold`), "multiclass" (preds are class labels shaped like
    target, or scores (N, C, ...) whose `top_k` highest count as predicted) or "multilabel"
    (preds and target (N, L, ...); thresholded like binary). `ignore_index` drops the
    positions whose target equals it. average: "micro" (counts pooled over classes),
    "macro" (mean of per-class scores; for multiclass, classes absent from both preds and
    target are left out, as scikit-learn does), "weighted" (by support, tp + fn) or
    "none"/None (per class); binary ignores it. A score whose denominator is 0 is
    `zero_division` (0 or 1).
    """

    def __init__(self, task: str, threshold: float = 0.5, num_classes: int | None = None,
                 num_labels: int | None = None, average: str | None = "micro", top_k: int = 1,
                 ignore_index: int | None = None, zero_division: float = 0.0):
        super().__init__()
        name = type(self).__name__
        self.task = task
        self.size = check_task(name, task, num_classes, num_labels)
        self.num_classes, self.num_labels = num_classes, num_labels
        self.average = check_average(name, average, AVERAGES)
        self.threshold = check_threshold(name, threshold)
        self.top_k = check_top_k(name, top_k, task, num_classes)
        self.ignore_index = check_ignore_index(name, ignore_index)
        if not isinstance(zero_division, numbers.Real) or zero_division not in (0, 1):
            raise ValueError(f"{name}: zero_division must be 0 or 1, got {zero_division!r}")
        self.zero_division = float(zero_division)
        shape = () if self.size is None else (self.size,)
        for state in ("tp", "fp", "tn", "fn"):
            self.add_state(state, np.zeros(shape, dtype=np.int64), "sum")

    def update(self, preds, target) -> None:
        preds, target = self.as_arrays(preds, target)
        counts = self._count(preds, target, self._device.xp)
        self.tp, self.fp, self.tn, self.fn = (
            old + new for old, new in zip((self.tp, self.fp, self.tn, self.fn), counts))

    def _count(self, preds, target, xp):
        name = type(self).__name__
        if self.task == "binary":
            p, t = binary_labels(name, preds, target, self.threshold, self.ignore_index, xp)
            tp, fp, fn = (p * t).sum(), (p * (1 - t)).sum(), ((1 - p) * t).sum()
            return tp, fp, p.size - tp - fp - fn, fn
        if self.task == "multilabel":
            p, t, valid = multilabel_inputs(name, preds, target, self.size, self.ignore_index,
                                            xp)
            p = p > self.threshold if p.dtype.kind == "f" else p == 1
            if valid is None:
                valid = xp.ones(t.shape, dtype=bool)
            return tuple((mask & valid).sum(axis=0) for mask in
                         (p & t, p & ~t, ~p & ~t, ~p & t))
        return self._count_multiclass(*multiclass_inputs(name, preds, target, self.size,
                                                         self.ignore_index, xp), xp)

    def _count_multiclass(self, preds, target, xp):
        c = self.size
        if preds.ndim == 2 and self.top_k > 1:
            rank = xp.argsort(xp.argsort(-preds, axis=1), axis=1)
            predicted = rank < self.top_k
            actual = target[:, None] == xp.arange(c)
            tp = (predicted & actual).sum(axis=0)
            fp = (predicted & ~actual).sum(axis=0)
            fn = (~predicted & actual).sum(axis=0)
        else:
            labels = preds.argmax(axis=1) if preds.ndim == 2 else preds.astype(xp.int64)
            confusion = xp.bincount(target * c + labels, minlength=c * c).reshape(c, c)
            tp = xp.diagonal(confusion)
            fp = confusion.sum(axis=0) - tp
            fn = confusion.sum(axis=1) - tp
        return tp, fp, target.size - tp - fp - fn, fn

    def _score(self, tp, fp, tn, fn, xp):
        """The per-class (or pooled) score from the counts; elementwise."""
        raise NotImplementedError

    def compute(self):
        xp = self._device.xp
        tp, fp, tn, fn = self.tp, self.fp, self.tn, self.fn
        if self.task != "binary" and self.average == "micro":
            return self.as_result(self._score(tp.sum(), fp.sum(), tn.sum(), fn.sum(), xp))
        score = self._score(tp, fp, tn, fn, xp)
        if self.task == "binary" or self.average == "none":
            return self.as_result(score)
        if self.average == "weighted":
            weights = tp + fn
        elif self.task == "multiclass":
            weights = (tp + fp + fn > 0).astype(xp.int64)
        else:
            weights = xp.ones(score.shape, dtype=xp.int64)
        return self.as_result(safe_divide((weights * score).sum(), weights.sum(), xp))
