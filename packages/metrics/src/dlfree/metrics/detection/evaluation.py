"""The COCO detection evaluation (pycocotools' COCOeval evaluate, accumulate and summarize)
on flat host arrays: greedy matching per (image, class), 101-point interpolated precision,
recall, and the twelve summary numbers."""

from __future__ import annotations

import numpy as np

from .layout import class_keys, lookup, rows, runs
from .matching import greedy_match

# COCO's area ranges, inclusive at both ends: all, small, medium, large.
AREA_RANGES = np.array([[0, 1e5**2], [0, 32**2], [32**2, 96**2], [96**2, 1e5**2]])
AREA_NAMES = ("all", "small", "medium", "large")
# COCO's thresholds, built as pycocotools builds them so that equality tests agree.
COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1)
COCO_REC_THRESHOLDS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1)


def evaluate(det_image, det_label, det_score, det_area, gt_image, gt_label, gt_crowd, gt_area,
             ious, iou_thresholds, rec_thresholds, max_dets):
    """COCO precision (T, R, K, A, M) and recall (T, K, A, M), -1 where undefined, and the
    class labels (K,) they are indexed by.

    Detections and ground truths are flat arrays tagged with their image index; `ious` is
    in the layout of `layout.py`. Within an (image, class), detections rank by score (ties
    in input order) and only the best max_dets[-1] count, as in COCOeval.
    """
    classes, det_class, gt_class, det_key, gt_key = class_keys(det_image, det_label, gt_image,
                                                               gt_label)
    gt_order, gt_keys, gt_start, gt_count, _, row_length = rows(det_key, gt_key)
    if int(row_length.sum()) != ious.size:
        raise ValueError(f"MeanAveragePrecision: the stored IoUs ({ious.size}) do not fit the "
                         f"stored detections and ground truths ({int(row_length.sum())} pairs); "
                         "the state is inconsistent")
    row_start = np.cumsum(row_length) - row_length
    gt_ignore = gt_crowd[gt_order][None, :] | _outside(gt_area[gt_order])
    thresholds = np.asarray(iou_thresholds, dtype=float)

    order = np.lexsort((-det_score, det_key))
    group_keys, group_start, group_count = runs(det_key[order])
    rank = np.arange(order.size) - np.repeat(group_start, group_count)
    kept, rank = order[rank < max_dets[-1]], rank[rank < max_dets[-1]]
    group_count = np.minimum(group_count, max_dets[-1])

    # Only detections reaching the lowest threshold with some ground truth can match; the
    # rest match nothing and change nothing, so the matching skips them.
    row_best = np.full(det_key.size, -np.inf)
    if ious.size:
        row_best[row_length > 0] = np.maximum.reduceat(ious, row_start[row_length > 0])
    group_of = np.repeat(np.arange(group_keys.size), group_count)
    det_index = np.flatnonzero(row_best[kept] >= min(thresholds.min(), 1 - 1e-10))
    count = np.bincount(group_of[det_index], minlength=group_keys.size)
    used = count > 0
    slot = lookup(gt_keys, group_keys[used])[0]
    true_positive, matched = greedy_match(
        ious, row_start[kept], det_index, (np.cumsum(count) - count)[used], count[used],
        gt_start[slot], gt_count[slot], gt_ignore, gt_crowd[gt_order], thresholds, kept.size)
    false_positive = ~matched & ~_outside(det_area[kept])[:, None, :]

    counted = np.stack([np.bincount(gt_class[gt_order][~ignored], minlength=classes.size)
                        for ignored in gt_ignore], axis=1)  # (K, A) ground truths not ignored
    precision, recall = _accumulate(true_positive, false_positive, det_class[kept],
                                    det_score[kept], rank, counted, thresholds.size,
                                    rec_thresholds, max_dets)
    return classes, precision, recall


def _accumulate(true_positive, false_positive, det_class, det_score, rank, counted,
                n_thresholds, rec_thresholds, max_dets):
    """COCOeval.accumulate: precision (T, R, K, A, M) and recall (T, K, A, M) from the
    matching flags (A, T, n) of the kept detections, their class, score and rank within
    their (image, class), and the count (K, A) of ground truths not ignored."""
    n_classes, areas = counted.shape
    shape = (n_thresholds, len(rec_thresholds), n_classes, areas, len(max_dets))
    precision, recall = -np.ones(shape), -np.ones(shape[:1] + shape[2:])
    # per class, detections by score; ties keep (image, rank) order as COCOeval's do
    by_class = np.lexsort((-det_score, det_class))
    true_positive, false_positive = true_positive[:, :, by_class], false_positive[:, :, by_class]
    rank = rank[by_class]
    bounds = np.searchsorted(det_class[by_class], np.arange(n_classes + 1))
    for k in range(n_classes):  # each class ranks its own detections: one pass per class
        span = slice(bounds[k], bounds[k + 1])
        for m, limit in enumerate(max_dets):
            within = rank[span] < limit
            p, r = _precision_recall(true_positive[:, :, span][..., within],
                                     false_positive[:, :, span][..., within], counted[k],
                                     rec_thresholds)
            precision[:, :, k, :, m] = p.transpose(1, 2, 0)
            recall[:, k, :, m] = r.T
    return precision, recall


def _outside(area):
    """(A, N): whether each area falls outside each COCO area range."""
    return (area[None, :] < AREA_RANGES[:, :1]) | (area[None, :] > AREA_RANGES[:, 1:])


def _precision_recall(true_positive, false_positive, counted, rec_thresholds):
    """Interpolated precision (A, T, R) and recall (A, T) of score-ranked detections flagged
    (A, T, n), over `counted` (A,) ground truths; -1 for area ranges with none."""
    areas, thresholds, n = true_positive.shape
    rec_thresholds = np.asarray(rec_thresholds, dtype=float)
    precision = np.full((areas, thresholds, rec_thresholds.size), -1.0)
    recall = np.full((areas, thresholds), -1.0)
    defined = counted > 0
    if n == 0:
        precision[defined], recall[defined] = 0.0, 0.0
        return precision, recall
    tp = np.cumsum(true_positive, axis=-1, dtype=np.int32)
    fp = np.cumsum(false_positive, axis=-1, dtype=np.int32)
    tp_float = tp.astype(float)
    recall[defined] = tp_float[defined, :, -1] / counted[defined, None]
    ratio = tp_float / (fp + tp_float + np.spacing(1))
    envelope = np.maximum.accumulate(ratio[..., ::-1], axis=-1)[..., ::-1]
    # The first rank whose recall tp/counted reaches each threshold: recall takes only the
    # values j/counted, so find the least such j per threshold (with COCO's float division),
    # then search the integer counts of all rows at once, each row offset past the last.
    needed = np.zeros((areas, rec_thresholds.size), dtype=np.int64)
    for a in np.flatnonzero(defined):
        needed[a] = np.searchsorted(np.arange(counted[a] + 1) / counted[a], rec_thresholds)
    needed = np.minimum(needed, n + 1)
    offset = np.arange(areas * thresholds).reshape(areas, thresholds, 1)
    first = np.searchsorted((tp + offset * (n + 2)).ravel(),
                            (needed[:, None, :] + offset * (n + 2)).ravel())
    first = first.reshape(areas, thresholds, -1) - offset * n
    interpolated = np.where(first < n, np.take_along_axis(envelope, np.minimum(first, n - 1),
                                                          axis=-1), 0.0)
    precision[defined] = interpolated[defined]
    return precision, recall


def _mean_defined(values) -> float:
    """The mean of the entries that are not -1, or -1 when there are none (COCO's rule)."""
    values = values[values > -1]
    return float(values.mean()) if values.size else -1.0


def summarize(precision, recall, iou_thresholds, max_dets) -> dict:
    """COCO's summary numbers (map, map_50, map_75, map_{small,medium,large}, mar_{k} per
    max-detections limit k, mar_{small,medium,large}) as floats; AP uses the largest limit."""
    thresholds = np.asarray(iou_thresholds, dtype=float)
    last = len(max_dets) - 1
    stats = {"map": _mean_defined(precision[..., 0, last])}
    for name, value in (("map_50", 0.5), ("map_75", 0.75)):
        stats[name] = _mean_defined(precision[thresholds == value][..., 0, last])
    for a, name in enumerate(AREA_NAMES[1:], start=1):
        stats[f"map_{name}"] = _mean_defined(precision[..., a, last])
    for m, limit in enumerate(max_dets):
        stats[f"mar_{limit}"] = _mean_defined(recall[..., 0, m])
    for a, name in enumerate(AREA_NAMES[1:], start=1):
        stats[f"mar_{name}"] = _mean_defined(recall[..., a, last])
    return stats


def per_class(precision, recall) -> tuple[np.ndarray, np.ndarray]:
    """AP and AR (K,) of each class over all areas at the largest max-detections limit,
    each the mean of its defined entries (-1 if none)."""
    n_classes = precision.shape[2]
    return (_column_means(precision[..., 0, -1].reshape(-1, n_classes)),
            _column_means(recall[..., 0, -1]))


def _column_means(values) -> np.ndarray:
    """`_mean_defined` of each column of a 2-d array."""
    defined = values > -1
    count = defined.sum(axis=0)
    total = np.where(defined, values, 0.0).sum(axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), -1.0)
