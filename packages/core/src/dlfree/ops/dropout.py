"""The functional forms of basic layers: linear, bilinear, embedding, one_hot, dropout."""

from __future__ import annotations

import math
import warnings

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import DTypeError, ShapeError
from ..random import rng
from ..tensor import Tensor
from .inplace import apply_inplace

__all__ = ["linear", "bilinear", "embedding", "one_hot", "dropout", "dropout1d", "dropout2d",
           "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


# ------------------------------------------------------------------------ linear
class Linear(Function):
    """x @ weight.T (+ bias) for a 2-d x: one matrix product forward, two backward."""

    def forward(self, x, weight, *bias):
        need_x, need_w = self.needs_input_grad[:2] if self.needs_input_grad else (False, False)
        self.saves = ((1,) if need_x else ()) + ((0,) if need_w else ())
        out = x @ weight.T
        if bias:
            out += bias[0]
        return out

    def backward(self, g):
        need = self.needs_input_grad
        saved = self.saved_tensors
        weight = saved[0] if need[0] else None
        x = saved[-1] if need[1] else None
        if STATE.enabled:  # recording: the same products as Tensor ops, for double backward
            grads = (g @ weight if need[0] else None, g.T @ x if need[1] else None)
            return grads + ((g.sum(0) if need[2] else None,) if len(need) > 2 else ())
        g = g._data
        grads = (g @ weight._data if need[0] else None, g.T @ x._data if need[1] else None)
        if len(need) > 2:
            # the bias gradient, the column sums of g, as one matrix-vector product: a BLAS
            # call that reads g once, three times faster than a reduction over axis 0
            grads += (self.xp.ones(g.shape[0], dtype=g.dtype) @ g if need[2] else None,)
        return tuple(None if a is None else Tensor._make(a, self.device) for a in grads)


@autocast_policy("lower")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, for weight of shape (out_features, in_features) and input
    of shape (*, in_features)."""
    op = "linear"
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} and weight of shape "
                         f"{tuple(weight.shape)} do not fit; valid: weight (out_features, "
                         f"in_features) with in_features the input's last dim")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}; valid: ({weight.shape[0]},)")
    params = (weight,) if bias is None else (weight, bias)
    for p in params:
        if p._data.dtype != input._data.dtype:
            raise DTypeError(f"{op}: input is {input.dtype!r} but a parameter is {p.dtype!r}; "
                             "valid: the same floating dtype for all")
    if input.ndim == 2:
        return Linear.apply(input, *params)
    out = Linear.apply(input.reshape(-1, weight.shape[1]), *params)
    return out.reshape(tuple(input.shape[:-1]) + (weight.shape[0],))


@autocast_policy("promote")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """y_o = input1 @ weight[o] @ input2 + bias_o, for weight (out, in1, in2) and inputs
    (*, in1) and (*, in2) with the same leading dims."""
    op = "bilinear"
    if weight.ndim != 3 or input1.ndim == 0 or input2.ndim == 0 or \
            tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]) or \
            (input1.shape[-1], input2.shape[-1]) != tuple(weight.shape[1:]):
        raise ShapeError(f"{op}: input1 {tuple(input1.shape)}, input2 {tuple(input2.shape)} and "
                         f"weight {tuple(weight.shape)} do not fit; valid: inputs (*, in1) and "
                         "(*, in2) with the same leading dims, weight (out, in1, in2)")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} does not fit weight of shape "
                         f"{tuple(weight.shape)}; valid: ({weight.shape[0]},)")
    out_f, in1, in2 = weight.shape
    x1, x2 = input1.reshape(-1, in1), input2.reshape(-1, in2)
    # (B, in1) @ (in1, out * in2): every output's bilinear form in one matrix product
    left = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    out = (left * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(tuple(input1.shape[:-1]) + (out_f,))


# --------------------------------------------------------------------- embedding
class Embedding(Function):
    """weight[indices]; backward adds each output row's gradient into its weight row,
    times `row_scale` (0 for padding_idx, 1/count with scale_grad_by_freq) when given."""

    def forward(self, weight, indices, row_scale):
        self.indices, self.row_scale, self.rows = indices, row_scale, weight.shape[0]
        return weight[indices]

    def backward(self, g):
        return (EmbeddingBackward.apply(g, indices=self.indices, row_scale=self.row_scale,
                                        rows=self.rows),)


class EmbeddingBackward(Function):
    """Embedding's backward: a scatter-add of the scaled rows of g; its own gradient is the
    gather of the same rows, scaled again."""

    def forward(self, g, indices, row_scale, rows):
        self.indices, self.row_scale = indices, row_scale
        dim = g.shape[-1]
        values = g.reshape(-1, dim)
        if row_scale is not None:
            values = values * row_scale.reshape(-1, 1)
        out = self.xp.zeros((rows, dim), dtype=g.dtype)
        self.device.backend.scatter_add(out, indices.reshape(-1), values)
        return out

    def backward(self, gg):
        rows = Embedding.apply(gg, indices=self.indices, row_scale=None)
        if self.row_scale is None:
            return (rows,)
        scale = self.row_scale[..., None].astype(gg._data.dtype, copy=False)
        return (rows * Tensor._make(scale, self.device),)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of `weight` (num_embeddings, dim) at the integer `input`, shape (*input, dim).

    Row `padding_idx` gets no gradient; `max_norm` renormalises the looked-up rows of
    `weight` in place (as torch does); `scale_grad_by_freq` divides each row's gradient by
    its count in the batch.
    """
    op = "embedding"
    if sparse:
        raise ValueError(f"{op}: sparse gradients are not supported; use sparse=False")
    if weight.ndim != 2:
        raise ShapeError(f"{op}: weight must be 2-d (num_embeddings, embedding_dim), got shape "
                         f"{tuple(weight.shape)}")
    if input._data.dtype.kind not in "iu":
        raise DTypeError(f"{op}: indices must be an integer tensor, got {input.dtype!r}")
    xp, rows = input._device.xp, weight.shape[0]
    idx = input._data
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= rows):
        raise IndexError(f"{op}: indices must lie in [0, {rows}) for a weight of shape "
                         f"{tuple(weight.shape)}, got values in [{int(idx.min())}, "
                         f"{int(idx.max())}]")
    row_scale = None
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise ValueError(f"{op}: padding_idx {padding_idx} must be within [-{rows}, {rows})")
        row_scale = idx != padding_idx % rows
    if scale_grad_by_freq:
        inverse_count = 1 / xp.bincount(idx.reshape(-1), minlength=rows)[idx]
        row_scale = inverse_count if row_scale is None else row_scale * inverse_count
    if max_norm is not None:
        _renorm_rows(weight, xp.unique(idx), max_norm, norm_type)
    return Embedding.apply(weight, indices=idx, row_scale=row_scale)


def _renorm_rows(weight: Tensor, rows, max_norm: float, norm_type: float) -> None:
    """Scale the given rows of `weight` in place so that their norms are at most max_norm."""
    xp, data = weight._device.xp, weight._data
    picked = data[rows]
    norms = (xp.abs(picked) ** norm_type).sum(axis=1, keepdims=True) ** (1 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    data[rows] = picked * scale.astype(data.dtype)
    weight._vc[0] += 1


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape (*tensor, num_classes) with a 1 at each class index;
    num_classes=-1 means the largest index plus one."""
    op = "one_hot"
    if tensor._data.dtype.kind not in "iu":
        raise DTypeError(f"{op}: expected an integer (index) tensor, got {tensor.dtype!r}")
    idx, xp = tensor._data, tensor._device.xp
    if num_classes == -1:
        if idx.size == 0:
            raise ValueError(f"{op}: cannot infer the number of classes from an empty tensor of "
                             f"shape {tuple(tensor.shape)}; pass num_classes")
        num_classes = int(idx.max()) + 1
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num_classes):
        raise ValueError(f"{op}: class values must lie in [0, {num_classes}), got values in "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    out = (idx[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return Tensor._make(out, tensor._device)


# ----------------------------------------------------------------------- dropout
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
