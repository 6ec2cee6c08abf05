"""The confusion matrix, and the base of the metrics computed from it (MCC, Cohen's kappa)."""

from __future__ import annotations

import numpy as np

from .._math import safe_divide
from ..metric import Metric
from ._inputs import (
    TASKS,
    binary_labels,
    check_ignore_index,
    check_task,
    check_threshold,
    multiclass_inputs,
    multilabel_inputs,
)

NORMALIZE = ("true", "pred", "all", "none")


class ConfusionMatrixBase(Metric):
    """Accumulates counts of (target, prediction) pairs: a (2, 2) matrix for binary, (C, C)
    for multiclass (rows: target, columns: prediction), and (L, 2, 2) for multilabel (one
    [[tn, fp], [fn, tp]] block per label). Inputs and arguments as for `Accuracy`."""

    tasks = TASKS

    def __init__(self, task: str, num_classes: int | None = None, num_labels: int | None = None,
                 threshold: float = 0.5, ignore_index: int | None = None):
        super().__init__()
        name = type(self).__name__
        self.task = task
        self.size = check_task(name, task, num_classes, num_labels, self.tasks)
        self.num_classes, self.num_labels = num_classes, num_labels
        self.threshold = check_threshold(name, threshold)
        self.ignore_index = check_ignore_index(name, ignore_index)
        shape = {"binary": (2, 2), "multiclass": (self.size, self.size),
                 "multilabel": (self.size, 2, 2)}[task]
        self.add_state("confmat", np.zeros(shape, dtype=np.int64), "sum")

    def update(self, preds, target) -> None:
        preds, target = self.as_arrays(preds, target)
        xp, name = self._device.xp, type(self).__name__
        if self.task == "binary":
            p, t = binary_labels(name, preds, target, self.threshold, self.ignore_index, xp)
            counts = xp.bincount(t * 2 + p, minlength=4).reshape(2, 2)
        elif self.task == "multiclass":
            p, t = multiclass_inputs(name, preds, target, self.size, self.ignore_index, xp)
            p = p.argmax(axis=1) if p.ndim == 2 else p.astype(xp.int64)
            counts = xp.bincount(t * self.size + p, minlength=self.size ** 2)
            counts = counts.reshape(self.size, self.size)
        else:
            p, t, valid = multilabel_inputs(name, preds, target, self.size, self.ignore_index,
                                            xp)
            p = p > self.threshold if p.dtype.kind == "f" else p == 1
            cell = xp.arange(self.size) * 4 + t.astype(xp.int64) * 2 + p.astype(xp.int64)
            cell = cell.reshape(-1) if valid is None else cell[valid]
            counts = xp.bincount(cell, minlength=4 * self.size).reshape(self.size, 2, 2)
        self.confmat = self.confmat + counts


class ConfusionMatrix(ConfusionMatrixBase):
    """The confusion matrix (see `ConfusionMatrixBase` for its layout).

    normalize: "none"/None (counts, int64), "true" (each row sums to 1), "pred" (each
    column sums to 1) or "all" (the whole matrix sums to 1); rows or columns without any
    sample are 0, as in scikit-learn.
    """

    def __init__(self, task: str, num_classes: int | None = None, num_labels: int | None = None,
                 threshold: float = 0.5, ignore_index: int | None = None,
                 normalize: str | None = None):
        normalize = "none" if normalize is None else normalize
        if normalize not in NORMALIZE:
            raise ValueError(f"ConfusionMatrix: unknown normalize {normalize!r}; valid: "
                             f"{', '.join(map(repr, NORMALIZE))} or None")
        self.normalize = normalize
        super().__init__(task, num_classes, num_labels, threshold, ignore_index)

    def compute(self):
        confmat, xp = self.confmat, self._device.xp
        if self.normalize == "none":
            return self.as_result(confmat.copy())
        if self.normalize == "true":
            total = confmat.sum(axis=-1, keepdims=True)
        elif self.normalize == "pred":
            total = confmat.sum(axis=-2, keepdims=True)
        else:
            total = confmat.sum(axis=(-2, -1), keepdims=True)
        return self.as_result(safe_divide(confmat, total, xp))
