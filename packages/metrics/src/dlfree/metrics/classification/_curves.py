"""ROC and precision-recall points for many rows (classes or labels) at once, with no loop
over rows: exact (every distinct score is a threshold, tied scores form one point) or
binned (counts at given thresholds), and the areas computed from those points."""

from __future__ import annotations

from typing import NamedTuple

from .._math import safe_divide

NAN = float("nan")


class CurvePoints(NamedTuple):
    """The points of every row's curve, row after row, thresholds descending within a row.

    row, threshold, tps, fps: one entry per point (tps/fps: positives/negatives scoring at
    or above the threshold); first: the point opens its row; positives, negatives: each
    row's totals.
    """

    row: object
    threshold: object
    tps: object
    fps: object
    first: object
    positives: object
    negatives: object


def _opens_row(row, xp):
    first = xp.ones(row.shape, dtype=bool)
    first[1:] = row[1:] != row[:-1]
    return first


def _previous(values, first, xp):
    """Each point's predecessor in its row; 0 before the first (the curve's origin)."""
    return xp.where(first, 0.0, xp.roll(values, 1))


def exact_points(scores, positives, valid, xp) -> CurvePoints:
    """Points at every distinct score of each row of `scores` (R, M), with `positives` (R, M)
    marking positive samples and `valid` (R, M, or None) the samples that count."""
    rows, m = scores.shape
    scores = scores.astype(xp.float64)
    if valid is None:
        valid = xp.ones(scores.shape, dtype=bool)
    order = xp.argsort(-scores, axis=1)
    s = xp.take_along_axis(scores, order, axis=1)
    pos = xp.take_along_axis(positives, order, axis=1)
    counted = xp.take_along_axis(valid, order, axis=1)
    tps = xp.cumsum(pos & counted, axis=1, dtype=xp.float64)
    fps = xp.cumsum(~pos & counted, axis=1, dtype=xp.float64)
    seen = xp.cumsum(counted, axis=1)
    # A point closes each run of equal scores; a run of only uncounted samples is no point.
    closes = xp.ones(s.shape, dtype=bool)
    closes[:, :-1] = s[:, 1:] != s[:, :-1]
    ends = xp.flatnonzero(closes)
    row = ends // max(m, 1)
    seen_end = seen.reshape(-1)[ends]
    ends = ends[seen_end > _previous(seen_end, _opens_row(row, xp), xp)]
    row = ends // max(m, 1)
    return CurvePoints(row, s.reshape(-1)[ends], tps.reshape(-1)[ends], fps.reshape(-1)[ends],
                       _opens_row(row, xp), (positives & valid).sum(axis=1).astype(xp.float64),
                       (~positives & valid).sum(axis=1).astype(xp.float64))


def histograms(scores, positives, valid, thresholds, xp):
    """Per-row counts (R, T + 1) of positive and of negative samples by how many of the
    ascending `thresholds` (T,) their score reaches: the state of the binned curves."""
    rows, _ = scores.shape
    bins = thresholds.size + 1
    reached = xp.searchsorted(thresholds, scores.reshape(-1), side="right")
    cell = (xp.arange(rows)[:, None] * bins + reached.reshape(scores.shape))
    counted = xp.ones(scores.shape, dtype=bool) if valid is None else valid
    pos_hist = xp.bincount(cell[positives & counted], minlength=rows * bins)
    neg_hist = xp.bincount(cell[~positives & counted], minlength=rows * bins)
    return pos_hist.reshape(rows, bins), neg_hist.reshape(rows, bins)


def binned_counts(pos_hist, neg_hist, xp):
    """(tps, fps), each (R, T): samples scoring at or above each ascending threshold."""
    def at_or_above(hist):
        return xp.flip(xp.cumsum(xp.flip(hist, axis=1), axis=1), axis=1)[:, 1:]

    return (at_or_above(pos_hist).astype(xp.float64),
            at_or_above(neg_hist).astype(xp.float64))


def binned_points(pos_hist, neg_hist, thresholds, xp) -> CurvePoints:
    """The points of the binned curves, thresholds descending within each row."""
    tps, fps = binned_counts(pos_hist, neg_hist, xp)
    rows, count = tps.shape
    row = xp.repeat(xp.arange(rows), count)
    return CurvePoints(row, xp.tile(xp.flip(thresholds), rows),
                       xp.flip(tps, axis=1).reshape(-1), xp.flip(fps, axis=1).reshape(-1),
                       (xp.arange(rows * count) % count) == 0,
                       pos_hist.sum(axis=1).astype(xp.float64),
                       neg_hist.sum(axis=1).astype(xp.float64))


def auroc(points: CurvePoints, rows: int, xp):
    """Per-row area under the ROC curve (trapezoids from the origin); NaN for rows lacking
    positives or negatives."""
    tps, fps, first = points.tps, points.fps, points.first
    prev_tps, prev_fps = _previous(tps, first, xp), _previous(fps, first, xp)
    area = xp.bincount(points.row, weights=(fps - prev_fps) * (tps + prev_tps) / 2,
                       minlength=rows)
    return safe_divide(area, points.positives * points.negatives, xp, NAN)


def average_precision(points: CurvePoints, rows: int, xp):
    """Per-row average precision, sum over points of (recall step) x precision (scikit-learn's
    definition, no interpolation); NaN for rows without positives."""
    tps, fps = points.tps, points.fps
    precision = safe_divide(tps, tps + fps, xp, 1.0)
    gained = tps - _previous(tps, points.first, xp)
    total = xp.bincount(points.row, weights=gained * precision, minlength=rows)
    return safe_divide(total, points.positives, xp, NAN)


def _split(values, counts, xp):
    """`values` cut into consecutive pieces of `counts` (host ints) entries."""
    return xp.split(values, xp.cumsum(counts)[:-1].tolist())


def roc_curves(points: CurvePoints, rows: int, xp):
    """Per row: (fpr, tpr, thresholds), each starting at the point (0, 0) with threshold
    +inf, as scikit-learn's roc_curve(drop_intermediate=False)."""
    counts = xp.bincount(points.row, minlength=rows) + 1
    starts = xp.cumsum(counts) - counts
    position = xp.arange(points.row.size) + points.row + 1
    size = int(counts.sum())
    negatives, positives = points.negatives[points.row], points.positives[points.row]
    # A row without negatives (positives) has an undefined fpr (tpr) everywhere, origin too.
    origin_fpr = xp.where(points.negatives > 0, 0.0, NAN)
    origin_tpr = xp.where(points.positives > 0, 0.0, NAN)
    curves = []
    for values, first in ((safe_divide(points.fps, negatives, xp, NAN), origin_fpr),
                          (safe_divide(points.tps, positives, xp, NAN), origin_tpr),
                          (points.threshold, float("inf"))):
        out = xp.empty(size, dtype=xp.float64)
        out[starts] = first
        out[position] = values
        curves.append(_split(out, counts, xp))
    return [tuple(curve[r] for curve in curves) for r in range(rows)]


def pr_curves(points: CurvePoints, rows: int, xp):
    """Per row: (precision, recall, thresholds) with thresholds ascending and a last point
    (1, 0), as scikit-learn's precision_recall_curve (recall is 1 without positives)."""
    counts = xp.bincount(points.row, minlength=rows)
    starts = xp.cumsum(counts) - counts
    row = points.row
    # Reverse each row's points and leave one slot after them for the closing point.
    position = starts[row] + row + (starts[row] + counts[row] - 1 - xp.arange(row.size))
    size = int(counts.sum()) + rows
    closing = starts + counts + xp.arange(rows)
    tps, fps = points.tps, points.fps
    curves = []
    for values, last in ((safe_divide(tps, tps + fps, xp, 1.0), 1.0),
                         (safe_divide(tps, points.positives[row], xp, 1.0), 0.0)):
        out = xp.empty(size, dtype=xp.float64)
        out[closing] = last
        out[position] = values
        curves.append(_split(out, counts + 1, xp))
    thresholds = xp.empty(int(counts.sum()), dtype=xp.float64)
    thresholds[position - row] = points.threshold
    curves.append(_split(thresholds, counts, xp))
    return [tuple(curve[r] for curve in curves) for r in range(rows)]
