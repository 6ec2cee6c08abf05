"""Connectionist temporal classification loss (`ctc_loss`).

The forward-backward (alpha/beta) recursion runs in log space over the extended label
sequence (blank, l1, blank, l2, ..., blank), one step per time frame, each step vectorised
over the batch and the label positions.
"""

from __future__ import annotations

import math

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import check_float

__all__ = ["ctc_loss"]


class CTCLoss(Function):
    """Per-sample negative log-likelihood of the targets under all CTC alignments.

    As in torch, the gradient is exp(log_probs) - posterior, which is the gradient with
    respect to the logits when `log_probs` comes from log_softmax; it is not itself
    differentiable (nor in torch).
    """

    saves = (0,)

    def forward(self, log_probs, labels, skip, input_lengths, target_lengths, zero_infinity):
        xp = self.xp
        steps = log_probs.shape[0]
        batch = xp.arange(labels.shape[0])
        # log-probability of each extended label at each time step: (T, N, L)
        emit = xp.take_along_axis(log_probs, xp.broadcast_to(labels, (steps,) + labels.shape),
                                  axis=2)
        alpha = _alpha(xp, emit, skip, target_lengths)
        last = xp.maximum(input_lengths - 1, 0)
        end = 2 * target_lengths
        nll = -xp.logaddexp(alpha[last, batch, end],
                            xp.where(end > 0, alpha[last, batch, end - 1], -math.inf))
        empty = input_lengths == 0  # no frames: only the empty target has an alignment
        nll = xp.where(empty, xp.where(end == 0, 0.0, math.inf), nll).astype(log_probs.dtype)
        infinite = xp.isinf(nll)
        if zero_infinity:
            nll = xp.where(infinite, 0.0, nll).astype(log_probs.dtype)
        if self.needs_input_grad:
            self.labels, self.emit, self.alpha = labels, emit, alpha
            self.skip, self.input_lengths, self.last, self.end = skip, input_lengths, last, end
            self.nll = nll
            self.dropped = infinite if zero_infinity else None
        return nll

    def backward(self, g):
        xp = self.xp
        log_probs, labels, alpha = self.saved_tensors[0]._data, self.labels, self.alpha
        beta = _beta(xp, self.emit, self.skip, self.last, self.end)
        both = alpha + beta  # log of (probability of the paths through (t, s)) * emit
        top = both.max(axis=2, keepdims=True)
        top = xp.where(xp.isfinite(top), top, 0.0)
        # sum over the label positions that carry each class, as one batched product
        n_classes = log_probs.shape[2]
        carries = (labels[:, :, None] == xp.arange(n_classes)).astype(both.dtype)  # (N, L, C)
        per_class = xp.matmul(xp.exp(both - top).transpose(1, 0, 2), carries).transpose(1, 0, 2)
        log_per_class = xp.log(per_class) + top
        grad = xp.exp(log_probs) - xp.exp(log_per_class + self.nll[:, None] - log_probs)
        keep = xp.arange(log_probs.shape[0])[:, None] < self.input_lengths  # (T, N)
        if self.dropped is not None:
            keep &= ~self.dropped
        grad = xp.where(keep[:, :, None], grad * g._data[:, None], 0.0)
        return (Tensor._make(grad, self.device),)


def _alpha(xp, emit, skip, target_lengths):
    """log alpha (T, N, L): the log-probability of the prefixes ending at each position."""
    steps, batch, width = emit.shape
    alpha = xp.full(emit.shape, -math.inf, dtype=emit.dtype)
    alpha[0, :, 0] = emit[0, :, 0]
    if width > 1:
        alpha[0, :, 1] = xp.where(target_lengths > 0, emit[0, :, 1], -math.inf)
    padded = xp.full((batch, width + 2), -math.inf, dtype=emit.dtype)
    for t in range(1, steps):
        padded[:, 2:] = alpha[t - 1]
        from_skip = xp.where(skip, padded[:, :-2], -math.inf)
        alpha[t] = xp.logaddexp(xp.logaddexp(padded[:, 2:], padded[:, 1:-1]), from_skip)
        alpha[t] += emit[t]
    return alpha


def _beta(xp, emit, skip, last, end):
    """log beta (T, N, L): the log-probability of the suffixes starting at each position,
    from each sample's last frame `last` and final positions `end` and `end - 1`."""
    steps, batch, width = emit.shape
    rows = xp.arange(batch)
    start = xp.full((batch, width), -math.inf, dtype=emit.dtype)
    start[rows, end] = emit[last, rows, end]
    has_label = end > 0
    start[rows[has_label], end[has_label] - 1] = emit[last, rows, end - 1][has_label]
    skip_ahead = xp.zeros_like(skip)
    skip_ahead[:, :-2] = skip[:, 2:]
    beta = xp.full(emit.shape, -math.inf, dtype=emit.dtype)
    padded = xp.full((batch, width + 2), -math.inf, dtype=emit.dtype)
    for t in range(steps - 1, -1, -1):
        if t + 1 < steps:
            padded[:, :-2] = beta[t + 1]
            from_skip = xp.where(skip_ahead, padded[:, 2:], -math.inf)
            beta[t] = xp.logaddexp(xp.logaddexp(padded[:, :-2], padded[:, 1:-1]), from_skip)
            beta[t] += emit[t]
        beta[t] = xp.where((last == t)[:, None], start, beta[t])
    return beta


def _lengths(values, batch: int, name: str, op: str) -> list:
    """`values` (a tensor, a sequence or an int) as a list of `batch` Python ints."""
    values = values.tolist() if isinstance(values, Tensor) else values
    values = [values] if isinstance(values, int) else [int(v) for v in values]
    if len(values) != batch:
        raise ShapeError(f"{op}: {name} has {len(values)} entries for a batch of {batch}")
    if any(v < 0 for v in values):
        raise ValueError(f"{op}: {name} must be non-negative, got {values}")
    return values


def _padded_targets(targets: Tensor, target_lengths: list, blank: int, op: str):
    """The targets as an (N, S) array, padded with `blank` past each target's length."""
    xp = targets._device.xp
    t = targets._data
    batch, longest = len(target_lengths), max(target_lengths, default=0)
    lengths = xp.asarray(target_lengths)
    if t.ndim == 1:  # the targets of all samples, concatenated
        if t.shape[0] != sum(target_lengths):
            raise ShapeError(f"{op}: concatenated targets of length {t.shape[0]} do not match "
                             f"target_lengths summing to {sum(target_lengths)}")
        offsets = xp.cumsum(lengths) - lengths
        positions = offsets[:, None] + xp.arange(longest)
        t = t[xp.minimum(positions, max(t.shape[0] - 1, 0))] if t.shape[0] else \
            xp.zeros((batch, longest), dtype=t.dtype)
    elif t.ndim != 2 or t.shape[0] != batch or t.shape[1] < longest:
        raise ShapeError(f"{op}: targets of shape {tuple(targets.shape)} do not fit a batch of "
                         f"{batch} with target lengths up to {longest}; valid: (N, S) with "
                         f"S >= {longest}, or 1-D concatenated targets")
    else:
        t = t[:, :longest]
    return xp.where(xp.arange(longest) < lengths[:, None], t, blank)


@autocast_policy("float32")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """CTC loss of `log_probs` (T, N, C) (log_softmax outputs) or (T, C) against `targets`:
    (N, S) padded, or all targets concatenated in 1-D. 'mean' divides each loss by its
    target length, then averages; `zero_infinity` zeroes impossible alignments' losses and
    gradients."""
    op = "ctc_loss"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: reduction must be one of 'none', 'mean', 'sum', got "
                         f"{reduction!r}")
    check_float(log_probs, op)
    if not isinstance(targets, Tensor) or targets._data.dtype.kind not in "iu":
        got = targets.dtype if isinstance(targets, Tensor) else type(targets).__name__
        raise DTypeError(f"{op}: targets must be an integer tensor of class indices, got {got}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    if log_probs.ndim != 3:
        raise ShapeError(f"{op}: log_probs must be (T, N, C) or (T, C), got shape "
                         f"{tuple(log_probs.shape)}")
    steps, batch, n_classes = log_probs.shape
    if not 0 <= blank < n_classes:
        raise IndexError(f"{op}: blank {blank} is out of range for {n_classes} classes; valid: "
                         f"[0, {n_classes - 1}]")
    in_lengths = _lengths(input_lengths, batch, "input_lengths", op)
    out_lengths = _lengths(target_lengths, batch, "target_lengths", op)
    if max(in_lengths, default=0) > steps:
        raise ValueError(f"{op}: input_lengths must be at most T={steps}, got "
                         f"{max(in_lengths)}")
    padded = _padded_targets(targets, out_lengths, blank, op)
    xp = log_probs._device.xp
    if padded.size and (int(padded.min()) < 0 or int(padded.max()) >= n_classes):
        raise IndexError(f"{op}: target labels must be in [0, {n_classes - 1}], got values in "
                         f"[{int(padded.min())}, {int(padded.max())}]")
    labels = xp.full((batch, 2 * padded.shape[1] + 1), blank, dtype=padded.dtype)
    labels[:, 1::2] = padded
    # a label may be reached from two positions back unless it repeats the label there
    skip = xp.zeros(labels.shape, dtype=bool)
    skip[:, 2:] = (labels[:, 2:] != blank) & (labels[:, 2:] != labels[:, :-2])
    lengths = xp.asarray(out_lengths)
    loss = CTCLoss.apply(log_probs, labels=labels, skip=skip, input_lengths=xp.asarray(in_lengths),
                         target_lengths=lengths, zero_infinity=zero_infinity)
    if reduction == "mean":
        divisor = Tensor._make(xp.maximum(lengths, 1).astype(loss._data.dtype), loss._device)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.reshape(()) if unbatched else loss
