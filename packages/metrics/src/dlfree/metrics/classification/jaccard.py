"""The Jaccard index (intersection over union) from the stat-score counts."""

from __future__ import annotations

from .._math import safe_divide
from .stat_scores import StatScoresMetric


class JaccardIndex(StatScoresMetric):
    """tp / (tp + fp + fn): the overlap of predicted and actual positives over their union.
    Arguments as `StatScoresMetric`, but average defaults to "macro" (mean IoU)."""

    def __init__(self, task: str, average: str | None = "macro", **kwargs):
        super().__init__(task, average=average, **kwargs)

    def _score(self, tp, fp, tn, fn, xp):
        return safe_divide(tp, tp + fp + fn, xp, self.zero_division)
