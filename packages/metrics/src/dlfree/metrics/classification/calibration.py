"""Calibration error: how far predicted confidences are from observed accuracies, by bins."""

from __future__ import annotations

import numbers

import numpy as np

from .._math import safe_divide
from ..metric import Metric
from ._inputs import binary_scores, check_ignore_index, check_task, multiclass_inputs

NORMS = ("l1", "l2", "max")


class CalibrationError(Metric):
    """The expected (norm="l1"), root-mean-square ("l2") or maximum ("max") calibration
    error over `n_bins` equal-width confidence bins [i/n, (i+1)/n) (the last one closed).

    Binary: the confidence is the positive-class probability and the accuracy the target.
    Multiclass: the confidence is the top probability and the accuracy whether its class is
    the target. Logits are turned into probabilities (sigmoid / softmax). The state is the
    per-bin count, confidence sum and accuracy sum, so merging is exact; NaN before any
    sample.
    """

    def __init__(self, task: str, n_bins: int = 15, norm: str = "l1",
                 num_classes: int | None = None, ignore_index: int | None = None):
        super().__init__()
        name = type(self).__name__
        self.task = task
        self.size = check_task(name, task, num_classes, None, ("binary", "multiclass"))
        self.num_classes = num_classes
        if not isinstance(n_bins, numbers.Integral) or isinstance(n_bins, bool) or n_bins < 1:
            raise ValueError(f"{name}: n_bins must be an int >= 1, got {n_bins!r}")
        if norm not in NORMS:
            raise ValueError(f"{name}: unknown norm {norm!r}; valid: {', '.join(map(repr, NORMS))}")
        self.n_bins, self.norm = int(n_bins), norm
        self.ignore_index = check_ignore_index(name, ignore_index)
        self.add_state("count", np.zeros(self.n_bins, dtype=np.int64), "sum")
        self.add_state("confidence", np.zeros(self.n_bins), "sum")
        self.add_state("accuracy", np.zeros(self.n_bins), "sum")

    def update(self, preds, target) -> None:
        preds, target = self.as_arrays(preds, target)
        xp, name = self._device.xp, type(self).__name__
        if self.task == "binary":
            confidence, correct = binary_scores(name, preds, target, self.ignore_index, xp)
        else:
            probs, target = multiclass_inputs(name, preds, target, self.size, self.ignore_index,
                                              xp, need_scores=True)
            confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == target
        confidence = confidence.astype(xp.float64)
        edges = xp.linspace(0.0, 1.0, self.n_bins + 1)
        bins = xp.clip(xp.searchsorted(edges, confidence, side="right") - 1, 0, self.n_bins - 1)
        self.count = self.count + xp.bincount(bins, minlength=self.n_bins)
        self.confidence = self.confidence + xp.bincount(bins, weights=confidence,
                                                        minlength=self.n_bins)
        self.accuracy = self.accuracy + xp.bincount(bins, weights=correct.astype(xp.float64),
                                                    minlength=self.n_bins)

    def compute(self):
        xp = self._device.xp
        gap = xp.abs(safe_divide(self.accuracy - self.confidence, self.count, xp))
        total = self.count.sum()
        if self.norm == "max":
            value = gap.max() if int(total) else float("nan")
        elif self.norm == "l1":
            value = safe_divide((gap * self.count).sum(), total, xp, float("nan"))
        else:
            value = xp.sqrt(safe_divide((gap ** 2 * self.count).sum(), total, xp, float("nan")))
        return self.as_result(value)
