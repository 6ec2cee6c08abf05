"""Argument checks and input formatting shared by the classification metrics: what the task
arguments mean, and how preds/target of each task become flat label or score arrays."""

from __future__ import annotations

import numbers

import dlfree as dl

TASKS = ("binary", "multiclass", "multilabel")


# ------------------------------------------------------------------- arguments
def check_task(metric: str, task, num_classes, num_labels, tasks=TASKS) -> int | None:
    """Validate the task arguments; returns the number of classes/labels (None for binary)."""
    if task not in tasks:
        raise ValueError(f"{metric}: unknown task {task!r}; valid: {', '.join(map(repr, tasks))}")
    if task == "multiclass":
        return _check_count(metric, "num_classes", num_classes, 2, task)
    if task == "multilabel":
        return _check_count(metric, "num_labels", num_labels, 1, task)
    return None


def _check_count(metric: str, name: str, value, least: int, task: str) -> int:
    if value is None:
        raise ValueError(f"{metric}: task={task!r} needs {name} (an int >= {least}), got None")
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < least:
        raise ValueError(f"{metric}: {name} must be an int >= {least}, got {value!r}")
    return int(value)


def check_average(metric: str, average, valid) -> str:
    """Validate `average` (None means "none")."""
    average = "none" if average is None else average
    if average not in valid:
        raise ValueError(f"{metric}: unknown average {average!r}; valid: "
                         f"{', '.join(map(repr, valid))} or None")
    return average


def check_threshold(metric: str, threshold) -> float:
    if not isinstance(threshold, numbers.Real) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"{metric}: threshold must be a number in [0, 1], got {threshold!r}")
    return float(threshold)


def check_ignore_index(metric: str, ignore_index) -> int | None:
    if ignore_index is not None and (not isinstance(ignore_index, numbers.Integral)
                                     or isinstance(ignore_index, bool)):
        raise ValueError(f"{metric}: ignore_index must be an int or None, got {ignore_index!r}")
    return None if ignore_index is None else int(ignore_index)


def check_top_k(metric: str, top_k, task: str, num_classes: int | None) -> int:
    if not isinstance(top_k, numbers.Integral) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"{metric}: top_k must be an int >= 1, got {top_k!r}")
    if top_k > 1 and task != "multiclass":
        raise ValueError(f"{metric}: top_k > 1 applies to task='multiclass' only, "
                         f"got task={task!r}")
    if num_classes is not None and top_k > num_classes:
        raise ValueError(f"{metric}: top_k={top_k} exceeds num_classes={num_classes}")
    return int(top_k)


# --------------------------------------------------------------------- helpers
def sigmoid(x, xp):
    """The logistic function without overflow for large |x|."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def softmax(x, xp, axis: int = -1):
    """Normalised exponentials along `axis`, shifted by the maximum so none overflows."""
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _probabilities(preds, xp, normalise):
    """Scores in [0, 1] stay; anything else is taken as logits and normalised (torchmetrics'
    rule, applied per batch)."""
    if preds.size and not bool(xp.all((preds >= 0) & (preds <= 1))):
        return normalise(preds)
    return preds


def _is_float(array) -> bool:
    return array.dtype.kind == "f"


def _shape_error(metric: str, task: str, preds, target, expected: str):
    return dl.ShapeError(f"{metric}: for task={task!r} preds shape {tuple(preds.shape)} and "
                         f"target shape {tuple(target.shape)} do not fit; expected {expected}")


def _check_values(metric: str, what: str, array, low: int, high: int, xp, ignore=None) -> None:
    """Integer values of `array` must lie in [low, high) (or equal `ignore`)."""
    if array.dtype.kind == "f" and array.size and bool(xp.any(array != xp.round(array))):
        raise ValueError(f"{metric}: {what} must hold integer labels, got non-integral values")
    bad = (array < low) | (array >= high)
    if ignore is not None:
        bad &= array != ignore
    if bool(xp.any(bad)):
        found = sorted(set(array[bad][:5].tolist()))
        valid = f"integers in [{low}, {high - 1}]" + ("" if ignore is None else
                                                      f" or ignore_index={ignore}")
        raise ValueError(f"{metric}: {what} holds values such as {found}; valid: {valid}")


def _class_last(array, num: int):
    """(N, K, ...) to (N * ..., K): the class/label axis last, everything else flattened."""
    axes = [0, *range(2, array.ndim), 1]
    return array.transpose(axes).reshape(-1, num)


# ----------------------------------------------------------------- label inputs
def binary_labels(metric, preds, target, threshold, ignore_index, xp):
    """Flat 0/1 int arrays (preds, target) for task='binary', ignored positions dropped."""
    if preds.shape != target.shape:
        raise _shape_error(metric, "binary", preds, target, "equal shapes")
    preds, target = preds.reshape(-1), target.reshape(-1)
    if ignore_index is not None:
        keep = target != ignore_index
        preds, target = preds[keep], target[keep]
    _check_values(metric, "target", target, 0, 2, xp)
    if _is_float(preds):
        preds = _probabilities(preds, xp, lambda p: sigmoid(p, xp)) > threshold
    else:
        _check_values(metric, "preds", preds, 0, 2, xp)
    return preds.astype(xp.int64), target.astype(xp.int64)


def multiclass_inputs(metric, preds, target, num_classes, ignore_index, xp, need_scores=False):
    """For task='multiclass': (preds, target) with target flat (M,) and preds either flat
    labels (M,) or scores (M, C); ignored samples dropped. Scores are turned into
    probabilities only when `need_scores` (ranking needs them; argmax and top-k do not)."""
    if preds.ndim == target.ndim + 1:
        if preds.shape[0] != target.shape[0] or preds.shape[2:] != target.shape[1:] or \
                preds.shape[1] != num_classes:
            raise _shape_error(metric, "multiclass", preds, target,
                               f"preds (N, {num_classes}, ...) with target (N, ...)")
        if not _is_float(preds):
            raise dl.DTypeError(f"{metric}: preds with a class dimension must be floating "
                                f"scores, got dtype {preds.dtype}")
        preds = _class_last(preds, num_classes)
    elif preds.shape == target.shape and not need_scores:
        if _is_float(preds):
            raise dl.DTypeError(f"{metric}: preds shaped like target must be integer labels, "
                                f"got dtype {preds.dtype}; give scores a class dimension "
                                f"(N, {num_classes}, ...)")
        preds = preds.reshape(-1)
    else:
        expected = f"preds (N, {num_classes}, ...) with target (N, ...)"
        raise _shape_error(metric, "multiclass", preds, target,
                           expected + ("" if need_scores else ", or equal shapes for labels"))
    target = target.reshape(-1)
    if ignore_index is not None:
        keep = target != ignore_index
        preds, target = preds[keep], target[keep]
    _check_values(metric, "target", target, 0, num_classes, xp)
    if preds.ndim == 1:
        _check_values(metric, "preds", preds, 0, num_classes, xp)
    elif need_scores:
        preds = _probabilities(preds, xp, lambda p: softmax(p, xp, axis=1))
    return preds, target.astype(xp.int64)


def multilabel_inputs(metric, preds, target, num_labels, ignore_index, xp):
    """For task='multilabel': (preds, target, valid) shaped (M, L); `valid` marks positions
    not ignored (None without ignore_index); float preds become probabilities."""
    if preds.shape != target.shape or preds.ndim < 2 or preds.shape[1] != num_labels:
        raise _shape_error(metric, "multilabel", preds, target,
                           f"equal shapes (N, {num_labels}, ...)")
    preds, target = _class_last(preds, num_labels), _class_last(target, num_labels)
    valid = None if ignore_index is None else target != ignore_index
    _check_values(metric, "target", target, 0, 2, xp, ignore=ignore_index)
    if _is_float(preds):
        preds = _probabilities(preds, xp, lambda p: sigmoid(p, xp))
    else:
        _check_values(metric, "preds", preds, 0, 2, xp)
    target = target == 1
    return preds, target, valid


def binary_scores(metric, preds, target, ignore_index, xp):
    """Flat float probabilities and 0/1 targets for task='binary', ignored positions dropped."""
    if preds.shape != target.shape:
        raise _shape_error(metric, "binary", preds, target, "equal shapes")
    if not _is_float(preds):
        raise dl.DTypeError(f"{metric}: preds must be floating scores (probabilities or "
                            f"logits), got dtype {preds.dtype}")
    preds, target = preds.reshape(-1), target.reshape(-1)
    if ignore_index is not None:
        keep = target != ignore_index
        preds, target = preds[keep], target[keep]
    _check_values(metric, "target", target, 0, 2, xp)
    return _probabilities(preds, xp, lambda p: sigmoid(p, xp)), target.astype(xp.int64)


def multilabel_scores(metric, preds, target, num_labels, ignore_index, xp):
    """(M, L) probabilities and targets for task='multilabel': 1, 0, or -1 where ignored."""
    if not _is_float(preds):
        raise dl.DTypeError(f"{metric}: preds must be floating scores (probabilities or "
                            f"logits), got dtype {preds.dtype}")
    preds, target, valid = multilabel_inputs(metric, preds, target, num_labels, ignore_index, xp)
    target = target.astype(xp.int64)
    if valid is not None:
        target = xp.where(valid, target, -1)
    return preds, target
