"""How same-class IoUs are stored: for each detection in input order, its IoU with every
ground truth of the same image and label, those in input order. `MeanAveragePrecision`
writes this layout and the COCO evaluation reads it back; both derive it here."""

from __future__ import annotations

import numpy as np


def class_keys(det_image, det_label, gt_image, gt_label):
    """The sorted labels seen, and one integer key per (image, label) for each detection
    and ground truth: (classes, det_class, gt_class, det_key, gt_key)."""
    classes, inverse = np.unique(np.concatenate((det_label, gt_label)), return_inverse=True)
    det_class, gt_class = inverse[:det_label.size], inverse[det_label.size:]
    n_classes = max(classes.size, 1)
    return classes, det_class, gt_class, det_image * n_classes + det_class, \
        gt_image * n_classes + gt_class


def runs(sorted_keys):
    """The distinct values of a sorted key array, with the start and length of each run."""
    return np.unique(sorted_keys, return_index=True, return_counts=True)


def lookup(table, keys):
    """Where each key sits in the sorted unique `table`, and whether it is there at all."""
    if table.size == 0:
        return np.zeros(keys.size, dtype=np.int64), np.zeros(keys.size, dtype=bool)
    pos = np.minimum(np.searchsorted(table, keys), table.size - 1)
    return pos, table[pos] == keys


def rows(det_key, gt_key):
    """The ground truths grouped by key, and each detection's row of same-key ground truths.

    Returns (gt_order, group_keys, group_start, group_count, det_group, row_length):
    gt_order lists the ground truths by key (input order within a key); group g, of key
    group_keys[g], holds gt_order[group_start[g]:][:group_count[g]]; detection d's row is
    group det_group[d] and has row_length[d] entries (0 when no ground truth shares its key).
    """
    gt_order = np.argsort(gt_key, kind="stable")
    keys, group_start, group_count = runs(gt_key[gt_order])
    det_group, found = lookup(keys, det_key)
    row_length = np.zeros(det_key.size, dtype=np.int64)
    row_length[found] = group_count[det_group[found]]
    return gt_order, keys, group_start, group_count, det_group, row_length


def same_class_pairs(det_image, det_label, gt_image, gt_label):
    """(det_index, gt_index): every same-(image, label) pair, in the stored order."""
    *_, det_key, gt_key = class_keys(det_image, det_label, gt_image, gt_label)
    gt_order, _, group_start, _, det_group, row_length = rows(det_key, gt_key)
    det_index = np.repeat(np.arange(det_key.size), row_length)
    within = np.arange(det_index.size) - np.repeat(np.cumsum(row_length) - row_length,
                                                   row_length)
    has_row = row_length > 0
    row_first = np.repeat(group_start[det_group[has_row]], row_length[has_row])
    return det_index, gt_order[row_first + within]
