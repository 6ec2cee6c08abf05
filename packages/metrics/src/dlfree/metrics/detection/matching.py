"""COCO's greedy matching of detections to ground truths, run for many (image, class) groups,
every IoU threshold and every area range at once: one array step per detection rank."""

from __future__ import annotations

import numpy as np

# Upper bound on the elements of one chunk's (areas, groups, thresholds, ground truths) state.
_CHUNK_ELEMENTS = 1 << 22


def greedy_match(ious, row_start, det_index, det_start, det_count, gt_start, gt_count,
                 gt_ignore, gt_crowd, thresholds, n_dets):
    """Match the detections of every group, best score first, as pycocotools' COCOeval does.

    Group p owns the detections det_index[det_start[p] + k] (k < det_count[p], by score)
    and the ground truths gt_start[p] + j (j < gt_count[p]); the IoU of detection d with
    the group's j-th ground truth is ious[row_start[d] + j]. gt_ignore (A, G) flags ground
    truths that area range a ignores (crowds always); gt_crowd (G,) flags crowds, which
    stay free to match again. At each threshold a detection takes the free ground truth of
    highest IoU (at least the threshold; the last one of equal IoU), preferring those not
    ignored. Detections left out of every group match nothing.

    Returns (true_positive, matched), boolean (A, T, n_dets): matched to a ground truth
    that is not ignored, and matched to any.
    """
    areas, thresholds = gt_ignore.shape[0], np.minimum(thresholds, 1 - 1e-10)
    true_positive = np.zeros((areas, thresholds.size, n_dets), dtype=bool)
    matched = np.zeros_like(true_positive)
    width = 1 << np.ceil(np.log2(gt_count)).astype(np.int64)
    for bucket_width in np.unique(width):
        groups = np.flatnonzero(width == bucket_width)
        groups = groups[np.argsort(-det_count[groups], kind="stable")]
        chunk = max(1, _CHUNK_ELEMENTS // (areas * thresholds.size * int(bucket_width)))
        for begin in range(0, groups.size, chunk):
            part = groups[begin:begin + chunk]
            _match_groups(ious, row_start, det_index, det_start[part], det_count[part],
                          gt_start[part], gt_count[part], gt_ignore, gt_crowd, thresholds,
                          int(bucket_width), true_positive, matched)
    return true_positive, matched


def _match_groups(ious, row_start, det_index, det_start, det_count, gt_start, gt_count,
                  gt_ignore, gt_crowd, thresholds, width, true_positive, matched):
    """Greedy matching for groups sorted by decreasing detection count, their ground truths
    padded to `width`; writes into true_positive and matched."""
    column = np.arange(width)
    valid = column[None, :] < gt_count[:, None]
    gt_index = np.where(valid, gt_start[:, None] + column, 0)
    ignored = gt_ignore[:, gt_index][:, :, None, :]  # (A, P, 1, W)
    crowd = (gt_crowd[gt_index] & valid)[None, :, None, :]
    taken = np.zeros((gt_ignore.shape[0], det_start.size, thresholds.size, width), dtype=bool)
    threshold = thresholds[None, None, :, None]
    # groups still holding a detection of rank k are a prefix, as counts are decreasing
    active_counts = np.searchsorted(-det_count, -np.arange(det_count.max()), side="left")
    for rank, active in enumerate(active_counts):
        det = det_index[det_start[:active] + rank]
        ok = valid[:active]
        iou = np.where(ok, ious[np.where(ok, row_start[det][:, None] + column, 0)], -np.inf)
        iou = iou[None, :, None, :]
        candidate = (iou >= threshold) & (~taken[:, :active] | crowd[:, :active])
        regular = candidate & ~ignored[:, :active]
        has_regular = regular.any(axis=-1)
        eligible = np.where(has_regular[..., None], regular, candidate)
        found = eligible.any(axis=-1)
        best = width - 1 - np.argmax(np.where(eligible, iou, -np.inf)[..., ::-1], axis=-1)
        a, p, t = np.nonzero(found)
        taken[a, p, t, best[a, p, t]] = True
        true_positive[:, :, det] = has_regular.transpose(0, 2, 1)
        matched[:, :, det] = found.transpose(0, 2, 1)
