"""Precision, recall, F-scores and specificity from the stat-score counts."""

from __future__ import annotations

import numbers

from .._math import safe_divide
from .stat_scores import StatScoresMetric


class Precision(StatScoresMetric):
    """tp / (tp + fp): how many predicted positives are right. Arguments as
    `StatScoresMetric`."""

    def _score(self, tp, fp, tn, fn, xp):
        return safe_divide(tp, tp + fp, xp, self.zero_division)


class Recall(StatScoresMetric):
    """tp / (tp + fn): how many actual positives are found (sensitivity). Arguments as
    `StatScoresMetric`."""

    def _score(self, tp, fp, tn, fn, xp):
        return safe_divide(tp, tp + fn, xp, self.zero_division)


class Specificity(StatScoresMetric):
    """tn / (tn + fp): how many actual negatives are recognised. Arguments as
    `StatScoresMetric`."""

    def _score(self, tp, fp, tn, fn, xp):
        return safe_divide(tn, tn + fp, xp, self.zero_division)


class FBetaScore(StatScoresMetric):
    """The weighted harmonic mean of precision and recall, recall counting `beta` times as
    much: (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp). Other arguments as
    `StatScoresMetric`; "macro" averages the per-class F-scores."""

    def __init__(self, task: str, beta: float = 1.0, **kwargs):
        if not isinstance(beta, numbers.Real) or isinstance(beta, bool) or not beta > 0:
            raise ValueError(f"{type(self).__name__}: beta must be a number > 0, got {beta!r}")
        self.beta = float(beta)
        super().__init__(task, **kwargs)

    def _score(self, tp, fp, tn, fn, xp):
        b2 = self.beta ** 2
        return safe_divide((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, xp, self.zero_division)


class F1Score(FBetaScore):
    """The harmonic mean of precision and recall (`FBetaScore` with beta=1)."""

    def __init__(self, task: str, **kwargs):
        super().__init__(task, beta=1.0, **kwargs)
