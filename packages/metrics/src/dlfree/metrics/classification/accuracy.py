"""Accuracy and Hamming distance (its complement) from the stat-score counts."""

from __future__ import annotations

from .._math import safe_divide
from .stat_scores import StatScoresMetric


class Accuracy(StatScoresMetric):
    """The fraction of correct predictions.

    Binary and multilabel: (tp + tn) / all, per label for multilabel. Multiclass: per class
    tp / (tp + fn) (its recall, so "macro" is balanced accuracy and "micro" the fraction of
    samples whose target is among the `top_k` predictions). Arguments as `StatScoresMetric`.
    """

    def _score(self, tp, fp, tn, fn, xp):
        if self.task == "multiclass":
            return safe_divide(tp, tp + fn, xp, self.zero_division)
        return safe_divide(tp + tn, tp + tn + fp + fn, xp, self.zero_division)


class HammingDistance(Accuracy):
    """The fraction of wrong predictions: 1 - `Accuracy` with the same arguments (for
    multilabel with average="micro", the fraction of wrong labels, scikit-learn's
    `hamming_loss`)."""

    def _score(self, tp, fp, tn, fn, xp):
        return 1.0 - super()._score(tp, fp, tn, fn, xp)
