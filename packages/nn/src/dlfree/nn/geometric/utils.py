"""Graphs as PyTorch Geometric holds them, and the helpers its layers use.

A graph is an `edge_index` (2, E) int64 tensor, row 0 the source node of each edge and row
1 its target, with an optional `edge_weight` (E,) or `edge_attr` (E, D); messages flow from
source to target and are aggregated at the target. The integer bookkeeping (self loops,
coalescing) is done on the backend arrays and is not differentiable; edge values travel
through differentiable ops, so gradients reach edge weights and attributes.
"""

from __future__ import annotations

import numbers

import dlfree as dl
from dlfree import Tensor
from dlfree.errors import DTypeError, ShapeError

__all__ = ["scatter", "softmax", "degree", "add_self_loops", "add_remaining_self_loops",
           "remove_self_loops", "coalesce", "to_undirected", "gcn_norm", "to_dense_batch",
           "maybe_num_nodes"]

# PyG's names for the reductions, and dl.free's own
_REDUCES = {"sum": "sum", "add": "sum", "mean": "mean", "max": "amax", "amax": "amax",
            "min": "amin", "amin": "amin", "mul": "prod", "prod": "prod"}


def _array(t: Tensor):
    return t.array


def _wrap(array, like: Tensor) -> Tensor:
    return dl.as_tensor(array, device=like.device)


def check_edge_index(edge_index, op: str) -> None:
    """ShapeError/DTypeError unless `edge_index` is a (2, E) integer tensor."""
    if not isinstance(edge_index, Tensor) or edge_index.ndim != 2 or edge_index.shape[0] != 2:
        shape = tuple(edge_index.shape) if isinstance(edge_index, Tensor) else \
            type(edge_index).__name__
        raise ShapeError(f"{op}: edge_index must be a (2, E) tensor of source and target "
                         f"nodes, got {shape}")
    if edge_index.dtype not in (dl.int64, dl.int32):
        raise DTypeError(f"{op}: edge_index must be int64 (or int32), got "
                         f"{edge_index.dtype.name}; convert with .long()")


def maybe_num_nodes(index: Tensor, num_nodes: int | None = None) -> int:
    """`num_nodes`, or one more than the largest node that `index` (an edge_index or a 1-d
    index) names."""
    if num_nodes is not None:
        return int(num_nodes)
    return int(index.array.max()) + 1 if index.numel() else 0


def scatter(src: Tensor, index: Tensor, dim: int = 0, dim_size: int | None = None,
            reduce: str = "sum") -> Tensor:
    """Reduce the slices of `src` along `dim` that share an `index` (1-d, one per slice)
    into `dim_size` slices (default index.max() + 1); "sum"/"add", "mean", "max"/"amax",
    "min"/"amin", "mul"/"prod". A slice no index names is 0 (1 for a product), as in PyG."""
    if reduce not in _REDUCES:
        raise ValueError(f"scatter: reduce must be one of {', '.join(map(repr, _REDUCES))}, "
                         f"got {reduce!r}")
    d = dim % src.ndim if isinstance(dim, numbers.Integral) and src.ndim else dim
    n = maybe_num_nodes(index, dim_size)
    shape = list(src.shape)
    shape[d] = n
    op = _REDUCES[reduce]
    out = (dl.ones if op == "prod" else dl.zeros)(*shape, dtype=src.dtype, device=src.device)
    if op == "sum":
        return out.index_add(d, index, src)
    return out.index_reduce(d, index, src, op, include_self=False)


def softmax(src: Tensor, index: Tensor, ptr=None, num_nodes: int | None = None,
            dim: int = 0) -> Tensor:
    """The softmax over the entries of `src` that share an `index` (PyG's `softmax`), the
    largest of each group subtracted first; `ptr` (CSR offsets) may stand for `index`."""
    if index is None:
        if ptr is None:
            raise ValueError("softmax: give index (or ptr)")
        counts = _array(ptr)[1:] - _array(ptr)[:-1]
        xp = ptr.device.xp
        index = _wrap(xp.repeat(xp.arange(counts.shape[0]), counts), ptr)
        num_nodes = counts.shape[0]
    return dl.segment_softmax(src, index, num_nodes, dim=dim)


def degree(index: Tensor, num_nodes: int | None = None, dtype=None) -> Tensor:
    """How often each node appears in `index` (1-d): in- or out-degree, by which row of
    edge_index is given."""
    xp = index.device.xp
    n = maybe_num_nodes(index, num_nodes)
    counts = xp.bincount(_array(index), minlength=n)
    return dl.as_tensor(counts, dtype=dtype or dl.float32, device=index.device)


def _loops(n: int, like: Tensor) -> Tensor:
    xp = like.device.xp
    loop = xp.arange(n, dtype=_array(like).dtype)
    return _wrap(xp.stack([loop, loop]), like)


def _loop_values(edge_attr: Tensor, fill_value, index: Tensor, n: int) -> Tensor:
    """The self loops' weights or attributes: a number, a tensor per loop, or a reduction
    ("add", "mean", "max", ...) of the attributes of the edges into each node."""
    if isinstance(fill_value, str):
        return scatter(edge_attr, index, 0, n, fill_value)
    shape = (n,) + tuple(edge_attr.shape[1:])
    if isinstance(fill_value, Tensor):
        return fill_value.to(edge_attr.dtype).expand(*shape)
    value = 1.0 if fill_value is None else fill_value
    return dl.full(shape, value, dtype=edge_attr.dtype, device=edge_attr.device)


def remove_self_loops(edge_index: Tensor, edge_attr: Tensor | None = None):
    """The edges that join two different nodes (and their attributes)."""
    check_edge_index(edge_index, "remove_self_loops")
    keep = edge_index[0] != edge_index[1]
    return edge_index[:, keep], None if edge_attr is None else edge_attr[keep]


def add_self_loops(edge_index: Tensor, edge_attr: Tensor | None = None, fill_value=None,
                   num_nodes: int | None = None):
    """The edges with a loop i -> i appended for every node, also where one exists;
    `fill_value` (default 1) gives the loops' weights or attributes (see `_loop_values`)."""
    check_edge_index(edge_index, "add_self_loops")
    n = maybe_num_nodes(edge_index, num_nodes)
    out = dl.cat([edge_index, _loops(n, edge_index)], 1)
    if edge_attr is None:
        return out, None
    return out, dl.cat([edge_attr, _loop_values(edge_attr, fill_value, edge_index[1], n)], 0)


def add_remaining_self_loops(edge_index: Tensor, edge_attr: Tensor | None = None,
                             fill_value=None, num_nodes: int | None = None):
    """One loop per node: a node's existing loop keeps its weight (the last one, if it has
    several), the others get `fill_value`; what GCNConv normalises."""
    check_edge_index(edge_index, "add_remaining_self_loops")
    n = maybe_num_nodes(edge_index, num_nodes)
    keep = edge_index[0] != edge_index[1]
    out = dl.cat([edge_index[:, keep], _loops(n, edge_index)], 1)
    if edge_attr is None:
        return out, None
    loops = _loop_values(edge_attr, fill_value, edge_index[1], n)
    is_loop = ~keep.array
    if is_loop.any():
        xp = edge_index.device.xp
        at = xp.flatnonzero(is_loop)[::-1]
        nodes, last = xp.unique(_array(edge_index[0])[at], return_index=True)
        # a node's last loop wins, as PyG's assignment in edge order does; unlike PyG's
        # gradient (torch's index_put sends it to every duplicate), only that loop gets it
        loops = dl.index_put(loops, (_wrap(nodes, edge_index),),
                             edge_attr[_wrap(at[last], edge_index)])
    return out, dl.cat([edge_attr[keep], loops], 0)


def coalesce(edge_index: Tensor, edge_attr: Tensor | None = None,
             num_nodes: int | None = None, reduce: str = "sum"):
    """The edges sorted by (source, target) with duplicates merged, their attributes
    reduced by `reduce` (as `scatter`)."""
    check_edge_index(edge_index, "coalesce")
    xp = edge_index.device.xp
    n = maybe_num_nodes(edge_index, num_nodes)
    ei = _array(edge_index)
    key = ei[0] * n + ei[1]
    unique, inverse = xp.unique(key, return_inverse=True)
    out = _wrap(xp.stack([unique // n, unique % n]).astype(ei.dtype), edge_index)
    if edge_attr is None:
        return out, None
    return out, scatter(edge_attr, _wrap(inverse.reshape(-1), edge_index), 0,
                        unique.shape[0], reduce)


def to_undirected(edge_index: Tensor, edge_attr: Tensor | None = None,
                  num_nodes: int | None = None, reduce: str = "sum"):
    """Every edge in both directions, coalesced (attributes of merged edges reduced)."""
    check_edge_index(edge_index, "to_undirected")
    both = dl.cat([edge_index, edge_index.flip(0)], 1)
    attr = None if edge_attr is None else dl.cat([edge_attr, edge_attr], 0)
    out, attr = coalesce(both, attr, num_nodes, reduce)
    return out if edge_attr is None else (out, attr)


def gcn_norm(edge_index: Tensor, edge_weight: Tensor | None = None,
             num_nodes: int | None = None, improved: bool = False,
             add_self_loops: bool = True, flow: str = "source_to_target", dtype=None):
    """Kipf & Welling's symmetric normalisation D^-1/2 (A + I) D^-1/2 as edge weights:
    loops of weight 1 (2 when `improved`) added where missing, degrees summed at the
    target (the source with flow="target_to_source"), isolated nodes left at 0."""
    if flow not in ("source_to_target", "target_to_source"):
        raise ValueError(f"gcn_norm: flow must be 'source_to_target' or 'target_to_source', "
                         f"got {flow!r}")
    check_edge_index(edge_index, "gcn_norm")
    n = maybe_num_nodes(edge_index, num_nodes)
    if edge_weight is None:
        edge_weight = dl.ones(edge_index.shape[1], dtype=dtype or dl.float32,
                              device=edge_index.device)
    if add_self_loops:
        edge_index, edge_weight = add_remaining_self_loops(edge_index, edge_weight,
                                                           2.0 if improved else 1.0, n)
    row, col = edge_index[0], edge_index[1]
    at = col if flow == "source_to_target" else row
    deg = scatter(edge_weight, at, 0, n, "sum")
    inv_sqrt = deg.pow(-0.5)
    inv_sqrt = inv_sqrt.masked_fill(inv_sqrt == float("inf"), 0.0)
    return edge_index, inv_sqrt[row] * edge_weight * inv_sqrt[col]


def to_dense_batch(x: Tensor, batch: Tensor | None = None, fill_value=0.0,
                   max_num_nodes: int | None = None, batch_size: int | None = None):
    """Node features (N, F) of a batch of graphs as (B, N_max, F), padded with
    `fill_value`, and the (B, N_max) mask of real nodes; `batch` must be sorted."""
    xp = x.device.xp
    if batch is None:
        batch = dl.zeros(x.shape[0], dtype=dl.int64, device=x.device)
    b = _array(batch)
    size = int(batch_size) if batch_size is not None else (int(b.max()) + 1 if b.size else 1)
    counts = xp.bincount(b, minlength=size)
    ptr = xp.concatenate([xp.zeros(1, dtype=counts.dtype), xp.cumsum(counts)])
    position = xp.arange(b.shape[0]) - ptr[b]
    width = int(max_num_nodes) if max_num_nodes is not None else \
        (int(counts.max()) if counts.size else 0)
    keep = position < width
    dense = dl.full((size, width) + tuple(x.shape[1:]), fill_value, dtype=x.dtype,
                    device=x.device)
    rows, cols = _wrap(b[keep], x), _wrap(position[keep], x)
    dense = dl.index_put(dense, (rows, cols), x[_wrap(keep, x)])
    mask = xp.zeros((size, width), dtype=bool)
    mask[b[keep], position[keep]] = True
    return dense, _wrap(mask, x)
