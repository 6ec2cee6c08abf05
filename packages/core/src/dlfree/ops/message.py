"""Message passing on a fixed graph as a few fused ops: what dlfree-nn's GAT, GATv2 and
GCN layers run on.

An `EdgeGraph` holds a graph's edges sorted by target and, computed once, what the ops
group by: the runs of each target and, lazily, the edges' order by source with its runs.
The ops read and reduce along those runs, so a training step sorts nothing:

- `gather_rows` / `sum_rows`: node rows read at each edge's source or target, and edge rows
  summed at their node; each is the other's adjoint.
- `edge_softmax`: the softmax of edge scores over the edges into each target (max, exp,
  sum and divide in one forward, in the edges' sorted order).
- `message_sum`: out_i = sum over the edges j -> i of alpha_ji * x_j, per head, without an
  (E, heads, C) graph node for the gathered messages; `edge_dot`: <a_i, b_j> per edge
  (the message sum's adjoint in alpha). These two and the transposed message sum (grouped
  by source) are each other's adjoints, so every backward is made of these ops and second
  derivatives come out of the same fused kernels.

The kernels work feature-major: the node rows are transposed to (K, N) so that gathering
edges and reducing each target's run read contiguous rows (`reduceat` along a row is ~3x
faster than along the columns of an (E, 32) array); no Python loop over nodes or edges.
"""

from __future__ import annotations

import math

from ..autograd.function import Function
from ..backends.segments import run_starts

__all__ = ["EdgeGraph", "gather_rows", "sum_rows", "edge_softmax", "message_sum", "edge_dot"]

_OTHER = {"dst": "src", "src": "dst"}


class EdgeGraph:
    """The edges of a graph of `n` nodes, `edge_index` (2, E) sorted by target, with the
    runs the message ops reduce along. `side("dst")` is (source of each edge, target of
    each edge, run starts of the targets, None); `side("src")` the same grouped by source,
    with the permutation that orders the edges by source in place of None."""

    def __init__(self, edge_index, n: int):
        xp = edge_index.device.xp
        ei = edge_index.array
        self.edge_index, self.n = edge_index, int(n)
        self.src = xp.ascontiguousarray(ei[0], dtype=xp.intp)
        self.dst = xp.ascontiguousarray(ei[1], dtype=xp.intp)
        self._sides = {"dst": (self.src, self.dst, run_starts(xp, self.dst), None)}

    def side(self, side: str):
        if side not in self._sides:
            xp = self.edge_index.device.xp
            order = xp.argsort(self.src, kind="stable")
            by_source = self.src[order]
            self._sides[side] = (self.dst[order], by_source, run_starts(xp, by_source), order)
        return self._sides[side]

    def nodes(self, side: str):
        """The node at the `side` end of each edge, in the edges' (target-sorted) order."""
        return self.dst if side == "dst" else self.src


def _flat(a):
    """An (M, ...) array as (M, K), also where M is 0."""
    return a.reshape(a.shape[0], math.prod(a.shape[1:]))


def _columns(xp, a):
    """An (M, ...) array as the contiguous (K, M) transpose of its (M, K) rows."""
    return xp.ascontiguousarray(_flat(a).T)


def _rows(xp, a_t, shape):
    """The inverse of `_columns`, to `shape`."""
    return xp.ascontiguousarray(a_t.T).reshape(shape)


class GatherRows(Function):
    """x (N, ...) read at each edge's `side` node: (E, ...)."""

    def forward(self, x, graph, side):
        self.graph, self.side = graph, side
        return self.xp.take(x, graph.nodes(side), axis=0)

    def backward(self, g):
        return (SumRows.apply(g, graph=self.graph, side=self.side),)


class SumRows(Function):
    """The edge rows v (E, ...) summed at each edge's `side` node: (N, ...)."""

    def forward(self, v, graph, side):
        self.graph, self.side = graph, side
        xp = self.xp
        _, ends, starts, order = graph.side(side)
        if order is not None:
            v = xp.take(v, order, axis=0)
        total = self.device.backend.segment_reduce_columns(_columns(xp, v), ends, starts,
                                                           graph.n, "sum")
        return _rows(xp, total, (graph.n,) + v.shape[1:])

    def backward(self, g):
        return (GatherRows.apply(g, graph=self.graph, side=self.side),)


class EdgeSoftmax(Function):
    """The softmax of the scores (E, ...) over the edges into each target, each target's
    largest score subtracted first so that large scores do not overflow."""

    save_output = True

    def forward(self, scores, graph):
        self.graph = graph
        xp, backend = self.xp, self.device.backend
        _, dst, starts, _ = graph.side("dst")
        s = _flat(scores).T.copy()  # worked on in place below
        peak = backend.segment_reduce_columns(s, dst, starts, graph.n, "amax")
        s -= xp.take(peak, dst, axis=1)
        xp.exp(s, out=s)
        total = backend.segment_reduce_columns(s, dst, starts, graph.n, "sum")
        s /= xp.take(total, dst, axis=1)
        return _rows(xp, s, scores.shape)

    def backward(self, g):
        (alpha,) = self.saved_tensors
        weighted = sum_rows(g * alpha, self.graph, "dst")
        return (alpha * (g - gather_rows(weighted, self.graph, "dst")),)


class MessageSum(Function):
    """out_i = sum over the edges grouped at node i (by target, or by source with
    side="src") of alpha_e (E, H) times x (N, H, C) at the edge's other end."""

    saves = (0, 1)

    def forward(self, x, alpha, graph, side):
        self.graph, self.side = graph, side
        xp = self.xp
        n, heads, channels = x.shape
        start, ends, starts, order = graph.side(side)
        if order is not None:
            alpha = xp.take(alpha, order, axis=0)
        messages = xp.take(_columns(xp, x), start, axis=1)
        per_head = messages.reshape(heads, channels, messages.shape[1])
        per_head *= _columns(xp, alpha)[:, None, :]
        total = self.device.backend.segment_reduce_columns(messages, ends, starts, graph.n,
                                                           "sum")
        return _rows(xp, total, (graph.n, heads, channels))

    def backward(self, g):
        x, alpha = self.saved_tensors
        gx = galpha = None
        if self.needs_input_grad[0]:
            gx = message_sum(g, alpha, self.graph, _OTHER[self.side])
        if self.needs_input_grad[1]:
            galpha = edge_dot(g, x, self.graph, self.side)
        return gx, galpha


class EdgeDot(Function):
    """out_e = <a at the edge's `side` node, b at its other end> per head: a, b (N, H, C),
    out (E, H) in the edges' order."""

    saves = (0, 1)

    def forward(self, a, b, graph, side):
        self.graph, self.side = graph, side
        xp = self.xp
        heads, channels = a.shape[1:]
        at = xp.take(_columns(xp, a), graph.nodes(side), axis=1)
        at *= xp.take(_columns(xp, b), graph.nodes(_OTHER[side]), axis=1)
        return xp.ascontiguousarray(at.reshape(heads, channels, at.shape[1]).sum(1).T)

    def backward(self, g):
        a, b = self.saved_tensors
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = message_sum(b, g, self.graph, self.side)
        if self.needs_input_grad[1]:
            gb = message_sum(a, g, self.graph, _OTHER[self.side])
        return ga, gb


def gather_rows(x, graph: EdgeGraph, side: str):
    """x (N, ...) at each edge's source (side="src") or target ("dst")."""
    return GatherRows.apply(x, graph=graph, side=side)


def sum_rows(v, graph: EdgeGraph, side: str):
    """The edge rows v (E, ...) summed at each edge's source or target node."""
    return SumRows.apply(v, graph=graph, side=side)


def edge_softmax(scores, graph: EdgeGraph):
    """Softmax of the edge scores (E, ...) over the edges into each target node."""
    return EdgeSoftmax.apply(scores, graph=graph)


def message_sum(x, alpha, graph: EdgeGraph, side: str = "dst"):
    """sum_j alpha_ji x_j at each target i (side="dst"; "src" sums at the sources)."""
    return MessageSum.apply(x, alpha, graph=graph, side=side)


def edge_dot(a, b, graph: EdgeGraph, side: str = "dst"):
    """<a_i, b_j> per head for each edge j -> i (side="dst"; "src" swaps the ends)."""
    return EdgeDot.apply(a, b, graph=graph, side=side)
