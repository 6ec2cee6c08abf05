"""A graph (`Data`) and a batch of graphs (`Batch`): node features concatenated, edges
renumbered into one big disconnected graph, and the `batch` vector naming each node's
graph, as PyTorch Geometric batches them."""

from __future__ import annotations

import dlfree as dl
from dlfree import Tensor

__all__ = ["Data", "Batch"]


class Data:
    """One graph: `x` (N, F) node features, `edge_index` (2, E), optional `edge_attr`
    (E, D) or edge weights, `y` a target, and any other tensors as keyword arguments."""

    def __init__(self, x: Tensor | None = None, edge_index: Tensor | None = None,
                 edge_attr: Tensor | None = None, y=None, num_nodes: int | None = None,
                 **extra):
        self.x, self.edge_index, self.edge_attr, self.y = x, edge_index, edge_attr, y
        self._num_nodes = num_nodes
        self.extra = dict(extra)

    @property
    def num_nodes(self) -> int:
        if self._num_nodes is not None:
            return self._num_nodes
        if self.x is not None:
            return int(self.x.shape[0])
        return int(self.edge_index.array.max()) + 1 if self.edge_index.numel() else 0

    @property
    def num_edges(self) -> int:
        return 0 if self.edge_index is None else int(self.edge_index.shape[1])

    def __getattr__(self, name: str):
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __repr__(self) -> str:
        parts = [f"{k}={list(v.shape)}" for k, v in (("x", self.x), ("edge_index",
                 self.edge_index), ("edge_attr", self.edge_attr), ("y", self.y))
                 if isinstance(v, Tensor)]
        return f"{type(self).__name__}({', '.join(parts)})"


def _cat(values: list):
    """Concatenate per-graph tensors along dim 0 (0-d targets stack); None if absent."""
    if any(v is None for v in values):
        return None
    if all(isinstance(v, Tensor) for v in values):
        return dl.cat([v.reshape(1) if v.ndim == 0 else v for v in values], 0)
    return dl.tensor(values)


class Batch(Data):
    """Several graphs as one: `batch[i]` is the graph of node i, `ptr` the offsets of
    each graph's nodes, `num_graphs` their count; edges are renumbered by those offsets."""

    def __init__(self, batch: Tensor, ptr: Tensor, **fields):
        super().__init__(**fields)
        self.batch, self.ptr = batch, ptr

    @property
    def num_graphs(self) -> int:
        return int(self.ptr.shape[0]) - 1

    @classmethod
    def from_data_list(cls, data_list: list) -> Batch:
        if not data_list:
            raise ValueError("Batch.from_data_list: needs at least one graph")
        sizes = [d.num_nodes for d in data_list]
        offsets = [0]
        for s in sizes:
            offsets.append(offsets[-1] + s)
        device = next(d.x.device for d in data_list if d.x is not None)
        edges = [d.edge_index + offsets[i] for i, d in enumerate(data_list)]
        batch = dl.cat([dl.full((s,), i, dtype=dl.int64, device=device)
                        for i, s in enumerate(sizes)])
        extra = {k: _cat([d.extra.get(k) for d in data_list]) for k in data_list[0].extra}
        return cls(batch, dl.tensor(offsets, dtype=dl.int64, device=device),
                   x=_cat([d.x for d in data_list]), edge_index=dl.cat(edges, 1),
                   edge_attr=_cat([d.edge_attr for d in data_list]),
                   y=_cat([d.y for d in data_list]), num_nodes=offsets[-1], **extra)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", num_graphs={self.num_graphs})"
