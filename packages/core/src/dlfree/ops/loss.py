"""Loss functions with PyTorch's signatures, `reduction` ('none' | 'mean' | 'sum') and options.

`cross_entropy` is fused: one Function, one log-softmax pass, no one-hot. `nll_loss` and
`binary_cross_entropy` are small Functions; the other losses are short compositions of
differentiable ops, so their double backward comes for free.
"""

from __future__ import annotations

import math
import warnings

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import DeviceError, DTypeError, ShapeError
from ..tensor import Tensor
from ._util import check_float
from .ctc import ctc_loss
from .elementwise import logsigmoid, minimum, where, xlogy
from .indexing import Index, IndexBackward
from .reduction import vector_norm
from .shape import broadcast_shapes

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "triplet_margin_loss", "multi_margin_loss", "multilabel_soft_margin_loss", "ctc_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


# ---------------------------------------------------------------------- helpers
def _reduction(reduction, op: str, size_average=None, reduce=None, valid=_REDUCTIONS) -> str:
    """The reduction to apply; the legacy `size_average`/`reduce` flags override it (as torch)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    if reduction not in valid:
        raise ValueError(f"{op}: reduction must be one of {', '.join(map(repr, valid))}, got "
                         f"{reduction!r}")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _constant(array, like: Tensor) -> Tensor:
    return Tensor._make(array, like._device)


def _same_size(input: Tensor, target: Tensor, op: str) -> None:
    """Warn like torch when the target broadcasts against the input; fail if it cannot."""
    check_float(input, op)
    if input.shape == target.shape:
        return
    try:
        broadcast_shapes(input.shape, target.shape)
    except ShapeError:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} and target of shape "
                         f"{tuple(target.shape)} do not broadcast; valid: the same shape"
                         ) from None
    warnings.warn(f"{op}: using a target size ({tuple(target.shape)}) that is different to the "
                  f"input size ({tuple(input.shape)}). This will likely lead to incorrect "
                  "results due to broadcasting. Please ensure they have the same size.",
                  UserWarning, stacklevel=3)


def _require_same_shape(input: Tensor, target: Tensor, op: str) -> None:
    check_float(input, op)
    if input.shape != target.shape:
        raise ShapeError(f"{op}: target of shape {tuple(target.shape)} must have the same shape "
                         f"as the input {tuple(input.shape)}")


def _weighted(loss: Tensor, weight, input: Tensor, reduction: str, op: str,
              mean_over_weight: bool) -> Tensor:
    """`loss * weight` reduced; 'mean' divides by sum(weight) or by the count, as torch's op."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ShapeError(f"{op}: weight of shape {tuple(weight.shape)} and input of shape "
                         f"{tuple(input.shape)} must have the same size")
    loss = loss * weight
    if reduction == "mean" and mean_over_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


# ------------------------------------------------------------ regression losses
@autocast_policy("float32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2; `weight` (input's shape) scales each term, and 'mean' then
    divides by its sum."""
    reduction = _reduction(reduction, "mse_loss", size_average, reduce)
    _same_size(input, target, "mse_loss")
    diff = input - target
    return _weighted(diff * diff, weight, input, reduction, "mse_loss", True)


@autocast_policy("float32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|; `weight` as in mse_loss."""
    reduction = _reduction(reduction, "l1_loss", size_average, reduce)
    _same_size(input, target, "l1_loss")
    return _weighted((input - target).abs(), weight, input, reduction, "l1_loss", True)


@autocast_policy("float32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    reduction = _reduction(reduction, "smooth_l1_loss", size_average, reduce)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    _same_size(input, target, "smooth_l1_loss")
    diff = input - target
    if beta == 0:
        return _reduce(diff.abs(), reduction)
    size = diff.abs()
    return _reduce(where(size < beta, diff * diff * (0.5 / beta), size - 0.5 * beta), reduction)


@autocast_policy("float32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); `weight` scales each term."""
    reduction = _reduction(reduction, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    _same_size(input, target, "huber_loss")
    diff = input - target
    size = diff.abs()
    loss = where(size < delta, diff * diff * 0.5, (size - 0.5 * delta) * delta)
    return _weighted(loss, weight, input, reduction, "huber_loss", False)


@autocast_policy("float32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log-likelihood of a Poisson target: exp(input) - target * input (or with
    `log_input=False`, input - target * log(input + eps)); `full` adds Stirling's term."""
    reduction = _reduction(reduction, "poisson_nll_loss", size_average, reduce)
    check_float(input, "poisson_nll_loss")
    loss = input.exp() - target * input if log_input else \
        input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 2.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


@autocast_policy("float32")
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (input - target)^2 / var), with var clamped to at least `eps`; `var`
    has the input's shape, or one dim of size 1 (or missing last dim) for shared variance."""
    op = "gaussian_nll_loss"
    reduction = _reduction(reduction, op)
    check_float(input, op)
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError(f"{op}: var must be non-negative, got {var}")
        var = input.detach() * 0 + var
    elif bool((var < 0).any()):
        raise ValueError(f"{op}: var has negative entries; valid: variances >= 0")
    if var.shape != input.shape:
        if tuple(var.shape) == tuple(input.shape[:-1]):
            var = var.unsqueeze(-1)
        elif var.ndim != input.ndim or sum(
                v for i, v in zip(input.shape, var.shape, strict=True) if i != v) != 1:
            raise ShapeError(f"{op}: var of shape {tuple(var.shape)} does not fit input of shape "
                             f"{tuple(input.shape)}; valid: the input's shape, that shape without "
                             "its last dim, or with one dim of size 1")
    # torch clamps a copy without recording, so the gradient passes the clamp unchanged
    var = var + (eps - var.detach()).clamp(min=0)
    diff = input - target
    loss = 0.5 * (var.log() + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_policy("float32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target * (log target - input); `input` holds
    log-probabilities, and `target` too with `log_target`. 'batchmean' divides the sum by
    the batch size (the true KL divergence); 'mean' divides by every element, as torch."""
    op = "kl_div"
    reduction = _reduction(reduction, op, size_average, reduce, _REDUCTIONS + ("batchmean",))
    check_float(input, op)
    if reduction == "mean" and size_average is None and reduce is None:
        warnings.warn("kl_div: reduction='mean' divides the total loss by both the batch size "
                      "and the support size; 'batchmean' divides only by the batch size, and "
                      "aligns with the KL divergence's definition.", UserWarning, stacklevel=2)
    loss = target.exp() * (target - input) if log_target else \
        xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


# ------------------------------------------------------- binary classification
class BinaryCrossEntropy(Function):
    """-(t log x + (1 - t) log(1 - x)) per element, each log clamped at -100 as torch."""

    saves = (0, 1)

    def forward(self, x, t):
        xp = self.xp
        log_x = xp.maximum(xp.log(x), -100)
        log_rest = xp.maximum(xp.log1p(-x), -100)
        return -(t * log_x + (1 - t) * log_rest)

    def backward(self, g):
        x, t = self.saved_tensors
        nx, nt = self.needs_input_grad
        gx = g * (x - t) / (x * (1 - x)).clamp(min=1e-12) if nx else None
        gt = g * ((-x).log1p() - x.log()) if nt else None
        return gx, gt


@autocast_policy("float32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (t log x + (1 - t) log(1 - x)) for probabilities x in [0, 1]; the logs are clamped
    at -100, so x = 0 or 1 gives a finite loss, as in torch."""
    op = "binary_cross_entropy"
    reduction = _reduction(reduction, op, size_average, reduce)
    _require_same_shape(input, target, op)
    data = input._data
    if data.size and not bool(((data >= 0) & (data <= 1)).all()):  # (NaN fails both tests)
        got = "NaN" if bool(input._device.xp.isnan(data).any()) else \
            f"values in [{float(data.min())}, {float(data.max())}]"
        raise ValueError(f"{op}: all elements of input should be between 0 and 1 (got {got}); "
                         "apply sigmoid first, or use binary_cross_entropy_with_logits")
    loss = BinaryCrossEntropy.apply(input, target.to(input.dtype))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_policy("float32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits;
    `pos_weight` (broadcast along the last dim) scales the positive term."""
    op = "binary_cross_entropy_with_logits"
    reduction = _reduction(reduction, op, size_average, reduce)
    _require_same_shape(input, target, op)
    positive = -logsigmoid(input)
    if pos_weight is not None:
        positive = positive * (1 + (pos_weight - 1) * target)
    loss = (1 - target) * input + positive
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# ------------------------------------------------------- multi-class by indices
def _class_targets(input, target, op: str) -> tuple:
    """`input` (N, C, d1, ...) or (C,) and class-index `target` (N, d1, ...) or (), checked;
    returned with a batch dim added to an unbatched pair, and whether one was."""
    check_float(input, op)
    if not isinstance(target, Tensor) or target._data.dtype.kind not in "iu":
        got = target.dtype if isinstance(target, Tensor) else type(target).__name__
        raise DTypeError(f"{op}: target must hold class indices (an int64 tensor), got {got}; "
                         "convert with .long()")
    if input.ndim == 0:
        raise ShapeError(f"{op}: input must have a class dim, got a 0-d tensor; valid: (C,), "
                         "(N, C) or (N, C, d1, ...)")
    if input.ndim == 1:
        if target.ndim:
            raise ShapeError(f"{op}: an unbatched input of shape {tuple(input.shape)} needs a 0-d "
                             f"target, got shape {tuple(target.shape)}")
        return input.unsqueeze(0), target.unsqueeze(0), True
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expected:
        raise ShapeError(f"{op}: target of shape {tuple(target.shape)} does not fit input of "
                         f"shape {tuple(input.shape)}; valid: {expected}, the input's shape "
                         "without its class dim 1")
    return input, target, False


def _class_weight(weight, input: Tensor, op: str):
    """The per-class `weight` (C,) as an array of the input's dtype, or None."""
    if weight is None:
        return None
    n_classes = input.shape[1]
    if tuple(weight.shape) != (n_classes,):
        raise ShapeError(f"{op}: weight of shape {tuple(weight.shape)} must have one entry per "
                         f"class, shape ({n_classes},), for input of shape {tuple(input.shape)}")
    if weight._device is not input._device:
        raise DeviceError(f"{op}: weight is on {weight._device} but input is on "
                          f"{input._device}; move one with .to(device)")
    return weight._data.astype(input._data.dtype, copy=False)


def _class_index(xp, target) -> tuple:
    """The index that picks input[i, target[i, d...], d...] for every position of `target`."""
    grids = [xp.arange(n).reshape((n,) + (1,) * (target.ndim - k - 1))
             for k, n in enumerate(target.shape)]
    return (grids[0], target, *grids[1:])


def _pick_classes(x: Tensor, target: Tensor, weight, ignore_index, op: str) -> tuple:
    """(index, per-target weight, valid) for class-index `target`, the last two as arrays:
    weight[target] (1 without weights) and 1, both 0 where target == ignore_index (None:
    ignore nothing). A target out of range raises IndexError."""
    xp = x._device.xp
    t = target._data
    dtype = x._data.dtype
    valid = None if ignore_index is None else t != ignore_index
    if valid is not None and not bool(valid.all()):
        t = xp.where(valid, t, 0)
        valid = valid.astype(dtype)
    else:
        valid = xp.ones(t.shape, dtype=dtype)
    n_classes = x.shape[1]
    if t.size and (int(t.min()) < 0 or int(t.max()) >= n_classes):
        bad = int(t.min()) if int(t.min()) < 0 else int(t.max())
        skip = "" if ignore_index is None else f", or ignore_index={ignore_index}"
        raise IndexError(f"{op}: target {bad} is out of bounds for {n_classes} classes (input "
                         f"shape {tuple(x.shape)}); valid: [0, {n_classes - 1}]{skip}")
    per_target = valid if weight is None else weight[t] * valid
    return _class_index(xp, t), per_target, valid


def _fold(loss, reduction: str, denominator):
    """Reduce a per-position loss array; 'mean' divides by `denominator`."""
    if reduction == "none":
        return loss
    total = loss.sum()
    return total / denominator if reduction == "mean" else total


def _gradient_divisor(denominator):
    """The 'mean' divisor for the gradient: with every position ignored (a zero sum of
    weights) the loss is nan but torch's gradient is zero, so divide by 1 instead."""
    return denominator + (denominator == 0)


class NllLoss(Function):
    """-input[target] * weight[target] per position, reduced; its gradient scatters the
    scaled weights back to the targets (linear in the input, so no second derivative)."""

    def forward(self, x, index, per_target, reduction):
        loss = -x[index] * per_target
        denominator = per_target.sum()
        if self.needs_input_grad:
            self.index, self.per_target, self.reduction, self.shape = \
                index, per_target, reduction, x.shape
            self.divisor = _gradient_divisor(denominator)
        return _fold(loss, reduction, denominator)

    def backward(self, g):
        scale = g / _constant(self.divisor, g) if self.reduction == "mean" else g
        return (IndexBackward.apply(scale * _constant(-self.per_target, g), index=self.index,
                                    unique=True, shape=self.shape),)


class CrossEntropy(Function):
    """log_softmax + nll over class dim 1 in one pass, with label smoothing and the
    reduction folded in. Per position, loss = -sum_c a_c log p_c, where a is the weighted
    (smoothed) target distribution; the gradient is g * (p * sum_c a_c - a), built without
    a one-hot: the scaled softmax, minus the target's share at its index."""

    saves = (0,)  # the logits, for the differentiable backward under create_graph

    def forward(self, x, index, per_target, valid, weight, smoothing, reduction):
        xp = self.xp
        shifted = x - x.max(axis=1, keepdims=True)
        picked = shifted[index]
        if smoothing:
            class_sum = (shifted * _along_classes(weight, x)).sum(axis=1)
        exp = xp.exp(shifted, out=shifted)
        sums = exp.sum(axis=1, keepdims=True)
        log_sum = xp.log(sums[:, 0])
        loss = (log_sum - picked) * per_target
        share = per_target  # sum_c a_c at each position
        if smoothing:
            total_weight = x.shape[1] if weight is None else weight.sum()
            uniform = smoothing / x.shape[1]
            loss = (1 - smoothing) * loss + uniform * valid * (log_sum * total_weight - class_sum)
            share = (1 - smoothing) * per_target + uniform * total_weight * valid
        denominator = per_target.sum()
        if self.needs_input_grad:
            self.exp, self.sums, self.share = exp, sums, share
            self.divisor = _gradient_divisor(denominator)
            self.index, self.per_target, self.valid, self.weight = index, per_target, valid, weight
            self.smoothing, self.reduction = smoothing, reduction
        return _fold(loss, reduction, denominator)

    def backward(self, g):
        if STATE.enabled:
            return (self._graph_backward(g),)
        eps = self.smoothing
        scale = g._data / self.divisor if self.reduction == "mean" else g._data
        grad = self.exp * (scale * self.share / self.sums[:, 0])[:, None]
        grad[self.index] -= (1 - eps) * scale * self.per_target
        if eps:
            grad -= (eps / grad.shape[1]) * _along_classes(self.weight, grad) * \
                (scale * self.valid)[:, None]
        return (Tensor._make(grad, self.device),)

    def _graph_backward(self, g):
        """The same gradient from Tensor ops, so that it can be differentiated again."""
        (x,) = self.saved_tensors
        eps = self.smoothing
        scale = g / _constant(self.divisor, g) if self.reduction == "mean" else g
        grad = x.softmax(1) * (scale * _constant(self.share, g)).unsqueeze(1)
        at_target = scale * _constant((1 - eps) * self.per_target, g)
        grad = grad - IndexBackward.apply(at_target, index=self.index, unique=True,
                                          shape=x.shape)
        if eps:
            spread = (scale * _constant(self.valid, g)).unsqueeze(1) * (eps / x.shape[1])
            grad = grad - (spread if self.weight is None else
                           spread * _constant(_along_classes(self.weight, x._data), g))
        return grad


class CrossEntropyProbs(Function):
    """Cross-entropy against class probabilities q (dim 1): -sum_c w_c q_c log p_c, with
    q smoothed towards uniform by `smoothing`; differentiable in the target too."""

    saves = (0, 1)

    def forward(self, x, q, weight, smoothing, reduction):
        xp = self.xp
        shifted = x - x.max(axis=1, keepdims=True)
        log_p = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
        if smoothing:
            q = q * (1 - smoothing) + smoothing / x.shape[1]
        weighted = q * _along_classes(weight, x)
        loss = -(weighted * log_p).sum(axis=1)
        if self.needs_input_grad:
            self.log_p, self.weighted = log_p, weighted
            self.weight, self.smoothing, self.reduction = weight, smoothing, reduction
            self.count = loss.size
        return _fold(loss, reduction, loss.size or math.nan)

    def backward(self, g):
        if STATE.enabled:
            return self._graph_backward(g)
        xp = self.xp
        nx, nq = self.needs_input_grad
        scale = g._data / self.count if self.reduction == "mean" else g._data
        scale = xp.expand_dims(scale, 1) if scale.ndim else scale
        log_p, weighted = self.log_p, self.weighted
        gx = gq = None
        if nx:
            gx = (xp.exp(log_p) * weighted.sum(axis=1, keepdims=True) - weighted) * scale
        if nq:
            gq = log_p * ((self.smoothing - 1) * _along_classes(self.weight, log_p) * scale)
        return tuple(None if a is None else Tensor._make(a, self.device) for a in (gx, gq))

    def _graph_backward(self, g):
        """The same gradients from Tensor ops, so that they can be differentiated again."""
        x, q = self.saved_tensors
        nx, nq = self.needs_input_grad
        eps = self.smoothing
        scale = g / self.count if self.reduction == "mean" else g
        scale = scale.unsqueeze(1) if scale.ndim else scale
        log_p = x.log_softmax(1)
        weight = _constant(_along_classes(self.weight, x._data), x) \
            if self.weight is not None else 1.0
        if eps:
            q = q * (1 - eps) + eps / x.shape[1]
        weighted = q * weight
        gx = (log_p.exp() * weighted.sum(1, keepdim=True) - weighted) * scale if nx else None
        gq = log_p * weight * (eps - 1) * scale if nq else None
        return gx, gq


def _along_classes(weight, like):
    """The per-class `weight` shaped to broadcast along dim 1 of `like` (1 when None)."""
    if weight is None:
        return 1.0
    return weight.reshape((1, -1) + (1,) * (like.ndim - 2))


@autocast_policy("float32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits `input` (N, C, d1, ...) or (C,) against class indices
    (N, d1, ...) or class probabilities (the input's shape). `weight` rescales classes,
    `ignore_index` skips positions, `label_smoothing` mixes in the uniform distribution.
    With indices, 'mean' divides by the summed weight of the counted positions."""
    op = "cross_entropy"
    reduction = _reduction(reduction, op, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be between 0.0 and 1.0, got "
                         f"{label_smoothing}")
    if isinstance(target, Tensor) and target._data.dtype.kind == "f":
        _require_same_shape(input, target, op)
        x, q = (input.unsqueeze(0), target.unsqueeze(0)) if input.ndim == 1 else (input, target)
        out = CrossEntropyProbs.apply(x, q.to(x.dtype), weight=_class_weight(weight, x, op),
                                      smoothing=label_smoothing, reduction=reduction)
        unbatched = input.ndim == 1
    else:
        x, t, unbatched = _class_targets(input, target, op)
        w = _class_weight(weight, x, op)
        index, per_target, valid = _pick_classes(x, t, w, ignore_index, op)
        out = CrossEntropy.apply(x, index=index, per_target=per_target, valid=valid, weight=w,
                                 smoothing=label_smoothing, reduction=reduction)
    return out.reshape(()) if unbatched and reduction == "none" else out


@autocast_policy("float32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[target] * weight[target] for log-probabilities `input` (N, C, d1, ...) or (C,);
    'mean' divides by the summed weight of the positions not equal to `ignore_index`."""
    op = "nll_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    x, t, unbatched = _class_targets(input, target, op)
    index, per_target, _ = _pick_classes(x, t, _class_weight(weight, x, op), ignore_index, op)
    out = NllLoss.apply(x, index=index, per_target=per_target, reduction=reduction)
    return out.reshape(()) if unbatched and reduction == "none" else out


@autocast_policy("float32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: sum over classes j != y of max(0, margin - x[y] + x[j])^p,
    times weight[y], divided by the number of classes; p is 1 or 2."""
    op = "multi_margin_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    if p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 are supported, got p={p}")
    x, t, unbatched = _class_targets(input, target, op)
    if x.ndim != 2:
        raise ShapeError(f"{op}: expected input of shape (N, C) or (C,), got "
                         f"{tuple(input.shape)}")
    index, per_target, _ = _pick_classes(x, t, _class_weight(weight, x, op), None, op)
    xp = x._device.xp
    others = _constant((xp.arange(x.shape[1]) != index[1][:, None]).astype(x._data.dtype), x)
    hinge = (margin - Index.apply(x, index=index, unique=True).unsqueeze(1) + x).clamp(min=0)
    if p == 2:
        hinge = hinge * hinge
    loss = (hinge * others).sum(1) * _constant(per_target / x.shape[1], x)
    return _reduce(loss.reshape(()) if unbatched else loss, reduction)


@autocast_policy("float32")
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class logistic loss averaged over the classes (last dim): -(y log sigmoid(x) +
    (1 - y) log sigmoid(-x)), `weight` rescaling the classes."""
    op = "multilabel_soft_margin_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    check_float(input, op)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.sum(-1) / input.shape[-1], reduction)


# ------------------------------------------------------------ embedding losses
def _same_ndim(op: str, **tensors) -> None:
    if len({t.ndim for t in tensors.values()}) > 1:
        shapes = ", ".join(f"{k} {tuple(t.shape)}" for k, t in tensors.items())
        raise ShapeError(f"{op}: all inputs must have the same number of dimensions, got "
                         f"{shapes}")


@autocast_policy("float32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1;
    inputs (N, D) with target (N,), or (D,) with a 0-d target."""
    op = "cosine_embedding_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    check_float(input1, op)
    if input1.shape != input2.shape or input1.ndim not in (1, 2) or \
            tuple(target.shape) != tuple(input1.shape[:-1]):
        raise ShapeError(f"{op}: expected inputs of one shape (N, D) with target (N,), or (D,) "
                         f"with a 0-d target; got {tuple(input1.shape)}, {tuple(input2.shape)} "
                         f"and target {tuple(target.shape)}")
    dim = input1.ndim - 1
    dot = (input1 * input2).sum(dim)
    norms = ((input1 * input1).sum(dim) + 1e-12) * ((input2 * input2).sum(dim) + 1e-12)
    cos = dot / norms.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0),
                                                     0.0)
    return _reduce(loss, reduction)


@autocast_policy("float32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), target being 1 or -1."""
    op = "margin_ranking_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    check_float(input1, op)
    _same_ndim(op, input1=input1, input2=input2, target=target)
    return _reduce((margin - target * (input1 - input2)).clamp(min=0), reduction)


@autocast_policy("float32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1."""
    op = "hinge_embedding_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    check_float(input, op)
    loss = where(target != 1, (margin - input).clamp(min=0), 0.0) + \
        where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


@autocast_policy("float32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm distance
    over the last dim; `swap` uses d(positive, negative) when it is smaller."""
    op = "triplet_margin_loss"
    reduction = _reduction(reduction, op, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    check_float(anchor, op)
    _same_ndim(op, anchor=anchor, positive=positive, negative=negative)

    def distance(a, b):
        return vector_norm(a - b + eps, p, -1)

    d_neg = distance(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, distance(positive, negative))
    return _reduce((margin + distance(anchor, positive) - d_neg).clamp(min=0), reduction)
