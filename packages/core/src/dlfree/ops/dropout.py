"""Dropout: elementwise, of whole channels (dropout1d/2d/3d), and alpha dropout for SELU
networks, all drawing their masks from dl's seeded generator."""

from __future__ import annotations

import math
import warnings

from ..autograd.function import Function
from ..errors import ShapeError
from ..random import rng
from ..tensor import Tensor
from .inplace import apply_inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]


class Dropout(Function):
    """x * scale (+ shift), where `scale` holds the drawn mask; backward reuses it."""

    def forward(self, x, scale, shift):
        self.scale = scale
        out = x * scale
        if shift is not None:
            out += shift
        return out

    def backward(self, g):
        return (g * Tensor._make(self.scale, self.device),)


_SELU_NEGATIVE = 1.7580993408473766  # -selu(-inf): where alpha dropout sends dropped values


def _check_p(p: float, op: str) -> None:
    if not 0 <= p <= 1:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")


def _drop(input: Tensor, mask_shape: tuple, p: float, alpha: bool) -> Tensor:
    """Dropout with one Bernoulli(1 - p) draw per entry of `mask_shape` (which broadcasts
    against the input), from dl's default generator."""
    dev, dtype = input._device, input._data.dtype
    keep = dev.backend.asarray(rng(None).random(mask_shape, dtype="float32") >= p,
                               index=dev.index).astype(dtype)
    if p == 1:
        return Dropout.apply(input, scale=keep * 0, shift=None)
    if not alpha:
        return Dropout.apply(input, scale=keep * dtype.type(1 / (1 - p)), shift=None)
    # the affine map that keeps zero mean and unit variance for SELU activations
    a = 1 / math.sqrt((_SELU_NEGATIVE ** 2 * p + 1) * (1 - p))
    shift = (keep - 1) * dtype.type(_SELU_NEGATIVE * a) + dtype.type(_SELU_NEGATIVE * a * p)
    return Dropout.apply(input, scale=keep * dtype.type(a), shift=shift)


def _dropout(input: Tensor, p: float, training: bool, inplace: bool, op: str, alpha: bool,
             feature_dims: int | None) -> Tensor:
    """Shared by every dropout: elementwise masks, or one per entry of the first
    `feature_dims` dims (whole channels). Eval mode, p = 0 and empty inputs return `input`."""
    _check_p(p, op)
    if not training or p == 0 or input.numel() == 0:
        return input
    shape = tuple(input.shape)
    if feature_dims is not None:
        if input.ndim < 2:
            raise ShapeError(f"{op}: feature dropout needs at least 2 dims, got input of shape "
                             f"{shape}")
        shape = shape[:feature_dims] + (1,) * (input.ndim - feature_dims)
    if inplace:
        return apply_inplace(input, lambda t: _drop(t, shape, p, alpha), (), f"{op}_")
    return _drop(input, shape, p, alpha)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p)."""
    return _dropout(input, p, training, inplace, "dropout", False, None)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability p."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"dropout1d: expected a 2-d or 3-d input (C, L) or (N, C, L), got "
                         f"shape {tuple(input.shape)}")
    return _dropout(input, p, training, inplace, "dropout1d", False, input.ndim - 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, H, W) input with probability p.

    As in torch, a 3-d input is taken as (N, C, L) (with a warning), not as unbatched.
    """
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: received a {input.ndim}-D input, which is deprecated; use "
                      "dropout, or a 3-d or 4-d input", UserWarning, stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: received a 3D input; it is taken as (N, C, L) and whole "
                      "channels of length L are dropped (use dropout1d for that)", UserWarning,
                      stacklevel=2)
    return _dropout(input, p, training, inplace, "dropout2d", False, 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: received a {input.ndim}-D input, which is deprecated; use "
                      "dropout, or a 4-d or 5-d input", UserWarning, stacklevel=2)
    return _dropout(input, p, training, inplace, "dropout3d", False,
                    2 if input.ndim == 5 else 1)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped values go to SELU's negative saturation and an
    affine map keeps the mean and variance (Klambauer et al., 2017)."""
    return _dropout(input, p, training, inplace, "alpha_dropout", True, None)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """`alpha_dropout` of whole channels (dims 0 and 1 pick the mask)."""
    return _dropout(input, p, training, inplace, "feature_alpha_dropout", True, 2)
