"""Readouts from node features to one vector per graph of a batch: the global add, mean
and max pools, SortAggregation (Zhang et al. 2018, DGCNN's sort pooling) and
GlobalAttention (Li et al. 2016's gated sum)."""

from __future__ import annotations

import dlfree as dl

from ..module import Module
from ._common import check_count
from .utils import scatter, softmax, to_dense_batch

__all__ = ["global_add_pool", "global_mean_pool", "global_max_pool", "SortAggregation",
           "GlobalAttention"]


def _pool(x, batch, size, reduce: str):
    if batch is None:
        return getattr(x, {"sum": "sum", "mean": "mean", "max": "amax"}[reduce])(
            0, keepdim=True)
    return scatter(x, batch, 0, size, reduce)


def global_add_pool(x, batch=None, size: int | None = None):
    """The sum of each graph's node features: (num_graphs, F); `batch` None means one graph."""
    return _pool(x, batch, size, "sum")


def global_mean_pool(x, batch=None, size: int | None = None):
    """The mean of each graph's node features: (num_graphs, F)."""
    return _pool(x, batch, size, "mean")


def global_max_pool(x, batch=None, size: int | None = None):
    """The feature-wise maximum over each graph's nodes: (num_graphs, F)."""
    return _pool(x, batch, size, "max")


class SortAggregation(Module):
    """Each graph's nodes sorted by their last feature, descending; the first `k` kept
    (zero rows pad a smaller graph) and flattened to (num_graphs, k * F)."""

    def __init__(self, k: int):
        super().__init__()
        self.k = check_count(k, "k", "SortAggregation")

    def forward(self, x, index=None, ptr=None, dim_size: int | None = None, dim: int = -2):
        fill = float(x.detach().min().item()) - 1.0
        dense, mask = to_dense_batch(x, index, fill, batch_size=dim_size)
        b, n, f = dense.shape
        xp = x.device.xp
        order = xp.argsort(-dense.detach().array[:, :, -1], axis=-1, kind="stable")
        flat = dl.as_tensor(order + xp.arange(b)[:, None] * n, device=x.device)
        dense = dense.reshape(b * n, f)[flat.reshape(-1)].reshape(b, n, f)
        if n >= self.k:
            dense = dense[:, :self.k]
        else:
            pad = dl.full((b, self.k - n, f), fill, dtype=x.dtype, device=x.device)
            dense = dl.cat([dense, pad], 1)
        dense = dense.masked_fill(dense == fill, 0.0)
        return dense.reshape(b, self.k * f)

    def extra_repr(self) -> str:
        return f"k={self.k}"


class GlobalAttention(Module):
    """sum_i softmax_i(gate_nn(x_i)) * nn(x_i) over each graph's nodes, the softmax taken
    within the graph; `nn` None uses the features as they are."""

    def __init__(self, gate_nn: Module, nn: Module | None = None):
        super().__init__()
        self.gate_nn, self.nn = gate_nn, nn

    def forward(self, x, batch=None, size: int | None = None):
        if batch is None:
            batch = dl.zeros(x.shape[0], dtype=dl.int64, device=x.device)
        n = size if size is not None else int(batch.array.max()) + 1 if batch.numel() else 1
        gate = self.gate_nn(x).reshape(x.shape[0], -1)
        values = self.nn(x) if self.nn is not None else x
        gate = softmax(gate, batch, num_nodes=n)
        return scatter(gate * values, batch, 0, n, "sum")
