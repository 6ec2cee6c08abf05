"""Small random graphs that hold every case a graph layer must handle: several graphs in
one batch, an isolated node in each, a self loop and a repeated edge. (A node with two
self loops is left to its own test: there PyG's gradient goes to both loops, although
only the last one's weight is used.)"""

from __future__ import annotations

import numpy as np

from support.specs import Fixed

SIZES = (5, 4, 6)  # nodes per graph; the last node of each has no edge


def batched_graph(seed: int = 0, sizes: tuple = SIZES) -> tuple:
    """(edge_index (2, E) int64, batch (N,) int64) of graphs with `sizes` nodes."""
    rs = np.random.default_rng(seed)
    edges, batch, offset = [], [], 0
    for g, n in enumerate(sizes):
        linked = n - 1  # nodes 0 .. n-2 take part in edges
        src = rs.integers(0, linked, 2 * linked)
        dst = rs.integers(0, linked, 2 * linked)
        apart = src != dst  # one self loop per graph, added below, so none repeats
        src, dst = src[apart], dst[apart]
        src = np.concatenate([src, [0, src[0]]])  # a self loop and a repeat of edge 0
        dst = np.concatenate([dst, [0, dst[0]]])
        edges.append(np.stack([src, dst]) + offset)
        batch += [g] * n
        offset += n
    return np.concatenate(edges, 1).astype(np.int64), np.asarray(batch, dtype=np.int64)


EDGE_INDEX, BATCH = batched_graph()
NUM_NODES, NUM_EDGES = len(BATCH), EDGE_INDEX.shape[1]
EDGES = Fixed(EDGE_INDEX)
BATCH_SPEC = Fixed(BATCH)
