"""Embedding lookups and one-hot encoding of integer indices."""

from __future__ import annotations

from ..autograd.function import Function
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..tracing_state import recorded

__all__ = ["embedding", "one_hot"]


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


@recorded
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
