"""Gradient clipping, as torch.nn.utils: by the total p-norm of all gradients, or by value
(`dl.nn.utils` and `dl.optim` export these).

These are the one place where gradients are changed in place, as in PyTorch.
"""

from __future__ import annotations

import math
import numbers

from ..autograd import no_grad
from ..creation import as_tensor, tensor
from ..tensor import Tensor


def _parameters(parameters, fn: str) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        params = list(parameters)
    except TypeError:
        raise TypeError(f"{fn}: parameters must be a tensor or an iterable of tensors, got "
                        f"{type(parameters).__name__}") from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{fn}: parameter {i} is a {type(p).__name__}, not a Tensor")
    return params


def _number(fn: str, name: str, value, valid: str, ok=lambda v: True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | str):
        raise ValueError(f"{fn}: {name} must be {valid}, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{fn}: {name} must be {valid}, got {value!r}") from None
    if math.isnan(number) or not ok(number):
        raise ValueError(f"{fn}: {name} must be {valid}, got {value!r}")
    return number


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients together so that their total `norm_type`-norm is at most
    `max_norm`; returns that total norm (before clipping) as a 0-d tensor.

    The total norm is the norm of all gradients taken as one vector: the norm of the
    per-tensor norms. `norm_type` is any p (also 0, inf, -inf, or "inf"). Gradients are
    multiplied by min(1, max_norm / (total + 1e-6)) in place.
    """
    fn = "clip_grad_norm_"
    params = _parameters(parameters, fn)
    max_norm = _number(fn, "max_norm", max_norm, "a number >= 0", lambda v: v >= 0)
    order = _number(fn, "norm_type", norm_type, "a number (p of the p-norm), or 'inf'")
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return tensor(0.0)
    device = grads[0].device
    xp = device.xp
    with device.context():
        norms = [xp.linalg.norm(g.array.reshape(-1), order).astype(g.array.dtype)
                 for g in grads if g.numel()]
        if not norms:
            return tensor(0.0, dtype=grads[0].dtype, device=device)
        total = xp.asarray(xp.linalg.norm(xp.stack(norms), order))
        if error_if_nonfinite and not bool(xp.isfinite(total)):
            raise ValueError(f"{fn}: the total norm of order {norm_type} of the gradients is "
                             f"{float(total)}, so they cannot be clipped; pass "
                             "error_if_nonfinite=False to scale them by it anyway")
        coef = as_tensor(xp.minimum(max_norm / (total + 1e-6), 1.0).astype(total.dtype))
        with no_grad():
            for g in grads:
                g.mul_(coef)
    return as_tensor(total)


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient elementwise into [-clip_value, clip_value], in place."""
    fn = "clip_grad_value_"
    params = _parameters(parameters, fn)
    clip_value = _number(fn, "clip_value", clip_value, "a number >= 0", lambda v: v >= 0)
    with no_grad():
        for p in params:
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
