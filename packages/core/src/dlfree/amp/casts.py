"""The casts autocast makes at the entry of the ops it covers, one helper per policy."""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..tensor import Tensor
from .state import AUTOCAST

__all__ = ["AUTOCAST", "to_autocast_dtype", "to_float32"]

_FLOAT32 = dtypes.float32.np
_FLOAT64 = dtypes.float64.np


class AutocastCast(Function):
    """`x.astype(dtype)` made by autocast; backward casts the gradient back to the source
    dtype, so that float32 weights get float32 gradients.

    It keeps nothing for backward, so backward never frees it: the cached cast of a weight
    can serve every graph built in one region, as torch's cast cache does.
    """

    def forward(self, x, dtype):
        self.source = dtypes.from_np(x.dtype)
        return x.astype(dtype)

    def backward(self, g):
        return (g.to(self.source),)

    def release(self) -> None:
        """Nothing to drop (see the class docstring)."""


def to_autocast_dtype(*tensors):
    """The inputs of a lower-precision op (matmul, linear, conv, attention) cast to the
    autocast dtype of their device: floating tensors other than float64, as torch; anything
    else passes through. One argument gives a tensor back, several a tuple."""
    return _cast_all(tensors, None)


def to_float32(*tensors):
    """The inputs of an op autocast keeps in float32 (softmax, norms, losses, sums) cast
    to float32; the rest as `to_autocast_dtype`."""
    return _cast_all(tensors, _FLOAT32)


def _cast_all(tensors: tuple, target):
    if STATE.backward:  # each op runs in the dtype its forward chose, as in torch
        return tensors[0] if len(tensors) == 1 else tensors
    cast = tuple([_cast(t, target) for t in tensors])
    return cast[0] if len(cast) == 1 else cast


def _cast(t, target):
    if not isinstance(t, Tensor):
        return t
    source = t._data.dtype
    if source.kind != "f" or source == _FLOAT64:
        return t
    lower = AUTOCAST.lower_dtype(t._device.type)
    if lower is None:
        return t
    dtype = lower if target is None else target
    if source == dtype:
        return t
    if not (AUTOCAST.cache_enabled and AUTOCAST.depth and STATE.enabled and t.requires_grad
            and t.grad_fn is None and t._view is None):
        return AutocastCast.apply(t, dtype=dtype)
    # a weight: cast once per region; its version tells an in-place update (a step) apart
    key = (id(t), dtype)
    hit = AUTOCAST.cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._vc[0]:
        return hit[2]
    out = AutocastCast.apply(t, dtype=dtype)
    AUTOCAST.cache[key] = (t, t._vc[0], out)
    return out
