"""Metrics of how scores rank positives above negatives: AUROC, average precision, and the
ROC and precision-recall curves themselves."""

from __future__ import annotations

import numbers

import dlfree as dl

import numpy as np

from .._math import safe_divide
from ..metric import Metric
from . import _curves
from ._inputs import (
    binary_scores,
    check_average,
    check_ignore_index,
    check_task,
    multiclass_inputs,
    multilabel_scores,
)


def _check_thresholds(metric: str, thresholds):
    """None (exact), or the ascending host array of binning thresholds in [0, 1]."""
    if thresholds is None:
        return None
    if isinstance(thresholds, numbers.Integral) and not isinstance(thresholds, bool):
        if thresholds < 2:
            raise ValueError(f"{metric}: thresholds as an int asks for that many evenly spaced "
                             f"thresholds and must be >= 2, got {thresholds}")
        return np.linspace(0.0, 1.0, int(thresholds))
    if isinstance(thresholds, dl.Tensor):
        thresholds = thresholds.numpy(force=True)
    try:
        values = np.asarray(thresholds, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim != 1 or values.size == 0 or \
            not np.all((values >= 0) & (values <= 1)):
        raise ValueError(f"{metric}: thresholds must be None (exact), an int >= 2 or a "
                         f"non-empty 1-D sequence of numbers in [0, 1], got {thresholds!r}")
    values = np.sort(values)
    if np.any(values[1:] == values[:-1]):
        raise ValueError(f"{metric}: thresholds must be distinct, got {thresholds!r}")
    return values


class RankingMetric(Metric):
    """Base of the metrics over the ranking of scores, one curve per class (multiclass, one
    class against the rest) or label (multilabel).

    preds are probabilities or logits (float): binary (N, ...), multiclass (N, C, ...)
    (softmax is applied unless all lie in [0, 1]), multilabel (N, L, ...) like target.
    thresholds=None keeps every score and computes exactly, tied scores forming one point
    (scikit-learn's results); an int n (n evenly spaced thresholds in [0, 1]) or a sequence
    of thresholds bins the scores instead, in constant memory. `ignore_index` drops the
    positions whose target equals it.
    """

    averages: tuple = ()

    def __init__(self, task: str, thresholds=None, num_classes: int | None = None,
                 num_labels: int | None = None, average: str | None = "macro",
                 ignore_index: int | None = None):
        super().__init__()
        name = type(self).__name__
        self.task = task
        self.size = check_task(name, task, num_classes, num_labels)
        self.num_classes, self.num_labels = num_classes, num_labels
        self.average = None
        if self.averages:
            valid = self.averages + (("micro",) if task == "multilabel" else ())
            self.average = check_average(name, average, valid)
        self.ignore_index = check_ignore_index(name, ignore_index)
        self.thresholds = _check_thresholds(name, thresholds)
        self.rows = 1 if task == "binary" else self.size
        if self.thresholds is None:
            self.add_state("preds", [], "cat")
            self.add_state("target", [], "cat")
        else:
            shape = (self.rows, self.thresholds.size + 1)
            self.add_state("pos_hist", np.zeros(shape, dtype=np.int64), "sum")
            self.add_state("neg_hist", np.zeros(shape, dtype=np.int64), "sum")

    def update(self, preds, target) -> None:
        preds, target = self.as_arrays(preds, target)
        xp, name = self._device.xp, type(self).__name__
        if self.task == "binary":
            preds, target = binary_scores(name, preds, target, self.ignore_index, xp)
        elif self.task == "multiclass":
            preds, target = multiclass_inputs(name, preds, target, self.size, self.ignore_index,
                                              xp, need_scores=True)
        else:
            preds, target = multilabel_scores(name, preds, target, self.size, self.ignore_index,
                                              xp)
        if self.thresholds is None:
            self.preds = [*self.preds, preds]
            self.target = [*self.target, target]
            return
        pos, neg = _curves.histograms(*self._rows(preds, target, xp), self._thresholds(), xp)
        self.pos_hist, self.neg_hist = self.pos_hist + pos, self.neg_hist + neg

    def _thresholds(self):
        return self._device.backend.asarray(self.thresholds, index=self._device.index)

    def _rows(self, preds, target, xp):
        """(scores, positives, valid), each (rows, M): one row per class or label."""
        if self.task == "binary":
            return preds[None, :], (target == 1)[None, :], None
        if self.task == "multiclass":
            return preds.T, target[None, :] == xp.arange(self.size)[:, None], None
        return preds.T, target.T == 1, None if self.ignore_index is None else target.T >= 0

    def _gathered(self, xp):
        """Everything kept so far: (preds, target)."""
        if self.preds:
            return xp.concatenate(self.preds), xp.concatenate(self.target)
        shape = (0,) if self.task == "binary" else (0, self.size)
        tshape = (0, self.size) if self.task == "multilabel" else (0,)
        return xp.zeros(shape), xp.zeros(tshape, dtype=xp.int64)

    def _pooled(self) -> bool:
        return self.average == "micro"

    def _points(self, xp) -> tuple[_curves.CurvePoints, int]:
        """The curve points of every row (one row in all when averaging "micro")."""
        if self.thresholds is None:
            scores, positives, valid = self._rows(*self._gathered(xp), xp)
            if self._pooled():
                scores, positives = scores.reshape(1, -1), positives.reshape(1, -1)
                valid = None if valid is None else valid.reshape(1, -1)
            return _curves.exact_points(scores, positives, valid, xp), scores.shape[0]
        pos, neg = self.pos_hist, self.neg_hist
        if self._pooled():
            pos, neg = pos.sum(axis=0, keepdims=True), neg.sum(axis=0, keepdims=True)
        return _curves.binned_points(pos, neg, self._thresholds(), xp), pos.shape[0]

    def _exact_curves(self, curves_of, xp):
        """The exact curves `curves_of(points, rows, xp)` gives, as tensors: one curve for
        a binary task, else a tuple of per-class lists."""
        points, rows = self._points(xp)
        curves = [tuple(self.as_result(v) for v in curve) for curve in curves_of(points, rows, xp)]
        return curves[0] if self.task == "binary" else tuple(map(list, zip(*curves)))


class AveragedRankingMetric(RankingMetric):
    """A per-row score averaged over rows: "macro" (mean over rows where it is defined),
    "weighted" (by each row's number of positives), "none"/None (per row), and for
    multilabel "micro" (all labels pooled into one ranking)."""

    averages = ("macro", "weighted", "none")

    def _per_row(self, points, rows, xp):
        raise NotImplementedError

    def compute(self):
        xp = self._device.xp
        points, rows = self._points(xp)
        values = self._per_row(points, rows, xp)
        if self.task == "binary" or self._pooled():
            return self.as_result(values[0])
        if self.average == "none":
            return self.as_result(values)
        defined = ~xp.isnan(values)
        weights = defined.astype(xp.float64)
        if self.average == "weighted":
            weights = weights * points.positives
        filled = xp.where(defined, values, 0.0)
        return self.as_result(safe_divide((weights * filled).sum(), weights.sum(), xp,
                                        float("nan")))


class AUROC(AveragedRankingMetric):
    """Area under the ROC curve: the probability that a random positive scores above a
    random negative (ties count half). NaN for a class without positives or without
    negatives, which "macro" and "weighted" leave out. Arguments as `RankingMetric`;
    average as
    `AveragedRankingMetric`."""

    def _per_row(self, points, rows, xp):
        return _curves.auroc(points, rows, xp)


class AveragePrecision(AveragedRankingMetric):
    """Average precision: the precision at each threshold weighted by the recall gained there
    (no interpolation, as scikit-learn). NaN for a class without positives, which "macro" and
    "weighted" leave out. Arguments as `RankingMetric`; average as
    `AveragedRankingMetric`."""

    def _per_row(self, points, rows, xp):
        return _curves.average_precision(points, rows, xp)


class ROC(RankingMetric):
    """The receiver operating characteristic: (fpr, tpr, thresholds), thresholds descending.

    Exact: as scikit-learn's roc_curve(drop_intermediate=False), starting at (0, 0) with
    threshold +inf; for multiclass/multilabel, lists with one curve per class. Binned: the
    points at the given thresholds (descending); multiclass/multilabel fpr and tpr are
    (C, T) tensors. Arguments as `RankingMetric` (no averaging).
    """

    def __init__(self, task: str, thresholds=None, num_classes: int | None = None,
                 num_labels: int | None = None, ignore_index: int | None = None):
        super().__init__(task, thresholds, num_classes, num_labels, None, ignore_index)

    def compute(self):
        xp = self._device.xp
        if self.thresholds is None:
            return self._exact_curves(_curves.roc_curves, xp)
        tps, fps = _curves.binned_counts(self.pos_hist, self.neg_hist, xp)
        nan = float("nan")
        fpr = safe_divide(fps, self.neg_hist.sum(axis=1, keepdims=True), xp, nan)
        tpr = safe_divide(tps, self.pos_hist.sum(axis=1, keepdims=True), xp, nan)
        fpr, tpr = xp.flip(fpr, axis=1), xp.flip(tpr, axis=1)
        if self.task == "binary":
            fpr, tpr = fpr[0], tpr[0]
        return (self.as_result(fpr), self.as_result(tpr),
                self.as_result(xp.flip(self._thresholds().astype(xp.float64))))


class PrecisionRecallCurve(RankingMetric):
    """(precision, recall, thresholds), thresholds ascending, with a final point (1, 0).

    Exact: as scikit-learn's precision_recall_curve; for multiclass/multilabel, lists with
    one curve per class. Binned: the points at the given thresholds, precision 1 where
    nothing scores that high; multiclass/multilabel precision and recall are (C, T + 1)
    tensors. Recall is 1 for a class without positives (scikit-learn's convention).
    Arguments as `RankingMetric` (no averaging).
    """

    def __init__(self, task: str, thresholds=None, num_classes: int | None = None,
                 num_labels: int | None = None, ignore_index: int | None = None):
        super().__init__(task, thresholds, num_classes, num_labels, None, ignore_index)

    def compute(self):
        xp = self._device.xp
        if self.thresholds is None:
            return self._exact_curves(_curves.pr_curves, xp)
        tps, fps = _curves.binned_counts(self.pos_hist, self.neg_hist, xp)
        positives = self.pos_hist.sum(axis=1, keepdims=True)
        closing = xp.ones((tps.shape[0], 1))
        precision = xp.concatenate([safe_divide(tps, tps + fps, xp, 1.0), closing], axis=1)
        recall = xp.concatenate([safe_divide(tps, positives, xp, 1.0), 0 * closing], axis=1)
        if self.task == "binary":
            precision, recall = precision[0], recall[0]
        return (self.as_result(precision), self.as_result(recall),
                self.as_result(self._thresholds().astype(xp.float64)))
