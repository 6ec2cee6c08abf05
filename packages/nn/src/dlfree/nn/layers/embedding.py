"""Lookup tables: `Embedding` (one row per index) and `EmbeddingBag` (the sum, mean or max
of the rows of each bag of indices)."""

from __future__ import annotations

import dlfree as dl
from dlfree import DTypeError, Parameter, ShapeError, Tensor
from dlfree import functional as F

from .. import init
from ..module import Module
from ._common import check_choice, check_count, empty_parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx, num_embeddings: int, layer: str):
    """padding_idx as a row in [0, num_embeddings) (negative counts from the end), or None."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"{layer}: padding_idx must be within [-{num_embeddings}, "
                         f"{num_embeddings}) for num_embeddings={num_embeddings}, got "
                         f"{padding_idx}")
    return padding_idx % num_embeddings


def _table(layer: Module, num_embeddings, embedding_dim, _weight, requires_grad, device, dtype):
    """Set `layer.weight`: the given `_weight` (shared, as torch does) or a fresh N(0, 1) table
    whose padding row is zero."""
    name = type(layer).__name__
    if _weight is None:
        layer.weight = empty_parameter(num_embeddings, embedding_dim, device=device, dtype=dtype,
                                       requires_grad=requires_grad)
        layer.reset_parameters()
        return
    if tuple(_weight.shape) != (num_embeddings, embedding_dim):
        raise ShapeError(f"{name}: _weight of shape {tuple(_weight.shape)} does not match "
                         f"num_embeddings={num_embeddings} and embedding_dim={embedding_dim}")
    layer.weight = Parameter(_weight, requires_grad=requires_grad)


def _zero_padding_row(weight: Tensor, padding_idx) -> None:
    if padding_idx is not None:
        with dl.no_grad():
            weight[padding_idx] = 0.0


class Embedding(Module):
    """A table of `num_embeddings` vectors of size `embedding_dim`, looked up by index:
    input of any shape of integers gives (*input, embedding_dim). The table starts N(0, 1);
    the `padding_idx` row starts at zero and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        if sparse:
            raise ValueError("Embedding: sparse gradients are not supported; use sparse=False")
        self.num_embeddings = check_count(num_embeddings, "num_embeddings", "Embedding", 0)
        self.embedding_dim = check_count(embedding_dim, "embedding_dim", "Embedding", 0)
        self.padding_idx = _padding_index(padding_idx, num_embeddings, "Embedding")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        _table(self, num_embeddings, embedding_dim, _weight, not _freeze, device, dtype)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        _zero_padding_row(self.weight, self.padding_idx)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding whose table is `embeddings` (2-d, shared); `freeze` stops its
        gradient."""
        if embeddings.ndim != 2:
            raise ShapeError(f"Embedding.from_pretrained: embeddings must be 2-d "
                             f"(num_embeddings, embedding_dim), got shape "
                             f"{tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """Reduce the embeddings of each bag of indices to one vector ('sum', 'mean' or 'max'),
    without materialising the per-index embeddings as a separate output.

    A 2-d input (B, N) is B bags of N indices; a 1-d input is all bags concatenated, with
    `offsets` giving where each starts (`include_last_offset`: plus a final end). Entries
    equal to `padding_idx` are left out; an empty bag gives zeros. `per_sample_weights`
    scales each entry ('sum' only).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        if sparse:
            raise ValueError("EmbeddingBag: sparse gradients are not supported; use sparse=False")
        self.num_embeddings = check_count(num_embeddings, "num_embeddings", "EmbeddingBag", 0)
        self.embedding_dim = check_count(embedding_dim, "embedding_dim", "EmbeddingBag", 0)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = check_choice(mode, "mode", "EmbeddingBag", ("sum", "mean", "max"))
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = _padding_index(padding_idx, num_embeddings, "EmbeddingBag")
        _table(self, num_embeddings, embedding_dim, _weight, True, device, dtype)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        _zero_padding_row(self.weight, self.padding_idx)

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        layer = "EmbeddingBag"
        if per_sample_weights is not None:
            if self.mode != "sum":
                raise ValueError(f"{layer}: per_sample_weights is only supported for "
                                 f"mode='sum', got mode={self.mode!r}")
            if tuple(per_sample_weights.shape) != tuple(input.shape):
                raise ShapeError(f"{layer}: per_sample_weights of shape "
                                 f"{tuple(per_sample_weights.shape)} must have the input's "
                                 f"shape {tuple(input.shape)}")
        rows = F.embedding(input, self.weight, None, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)
        if input.ndim == 2:
            if offsets is not None:
                raise ValueError(f"{layer}: offsets must be None for a 2-d input (B, N) of "
                                 f"fixed-size bags, got offsets of shape {tuple(offsets.shape)}")
            indices, valid, weights = input, None, per_sample_weights
            if weights is not None:
                weights = weights.unsqueeze(-1)
        elif input.ndim == 1:
            positions, valid = self._bag_positions(input, offsets)
            indices = dl.as_tensor(input.array[positions])
            rows = F.embedding(dl.as_tensor(positions), rows)
            weights = per_sample_weights
            if weights is not None:
                weights = F.embedding(dl.as_tensor(positions), weights.reshape(-1, 1))
        else:
            raise ShapeError(f"{layer}: input must be 1-d (with offsets) or 2-d (B, N), got "
                             f"shape {tuple(input.shape)}")
        return self._reduce(rows, indices, valid, weights)

    def _bag_positions(self, input: Tensor, offsets: Tensor | None):
        """(B, L) positions into the 1-d input for each bag, padded to the longest bag, and
        the mask of the real ones."""
        layer = "EmbeddingBag"
        if offsets is None or offsets.ndim != 1:
            got = "None" if offsets is None else f"shape {tuple(offsets.shape)}"
            raise ShapeError(f"{layer}: a 1-d input needs 1-d offsets (where each bag starts), "
                             f"got {got}")
        if offsets.array.dtype.kind not in "iu":
            raise DTypeError(f"{layer}: offsets must be an integer tensor, got {offsets.dtype!r}")
        xp, n = input.device.xp, input.shape[0]
        bounds = offsets.array.astype(xp.int64)
        if not self.include_last_offset:
            bounds = xp.concatenate([bounds, xp.asarray([n], dtype=xp.int64)])
        if bounds.size and (int(bounds[0]) != 0 or int(bounds[-1]) > n
                            or bool((bounds[1:] < bounds[:-1]).any())):
            raise ValueError(f"{layer}: offsets must start at 0, never decrease and stay within "
                             f"the input's {n} entries, got {offsets.array.tolist()}")
        starts, lengths = bounds[:-1], xp.diff(bounds)
        longest = int(lengths.max()) if lengths.size else 0
        steps = xp.arange(longest)
        valid = steps[None, :] < lengths[:, None]
        positions = xp.where(valid, starts[:, None] + steps[None, :], 0)
        return positions, valid

    def _reduce(self, rows: Tensor, indices: Tensor, valid, weights: Tensor | None) -> Tensor:
        """Reduce (B, L, D) rows over L, counting only valid, non-padding entries."""
        keep = valid
        if self.padding_idx is not None:
            not_padding = indices.array != self.padding_idx
            keep = not_padding if keep is None else keep & not_padding
        mask = None if keep is None else dl.as_tensor(keep[..., None].astype(rows.array.dtype))
        if rows.shape[1] == 0:  # every bag is empty: zeros, still connected to the weight
            return rows.sum(1)
        if self.mode == "max":
            if mask is None:
                return rows.amax(dim=1)
            best = rows.masked_fill(mask == 0, float("-inf")).amax(dim=1)
            return best.masked_fill(mask.sum(1) == 0, 0.0)
        if weights is not None:
            rows = rows * weights
        if mask is not None:
            rows = rows * mask
        total = rows.sum(1)
        if self.mode == "sum":
            return total
        count = rows.shape[1] if mask is None else mask.sum(1).clamp(min=1)
        return total / count

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An EmbeddingBag whose table is `embeddings` (2-d, shared); `freeze` stops its
        gradient."""
        if embeddings.ndim != 2:
            raise ShapeError(f"EmbeddingBag.from_pretrained: embeddings must be 2-d "
                             f"(num_embeddings, embedding_dim), got shape "
                             f"{tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings,
                  max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq,
                  mode=mode, sparse=sparse, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag
