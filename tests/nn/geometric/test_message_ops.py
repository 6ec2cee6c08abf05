"""The fused message ops of dlfree.ops.message against the composite ops they
replace (gathers, grouped sums, segment_softmax), forward and gradients in float32, then
gradcheck and gradgradcheck in float64; and GATConv's graph kept between calls."""

import copy

import dlfree as dl
from dlfree.nn import geometric as G
from dlfree.ops.message import (
    EdgeGraph,
    edge_dot,
    edge_softmax,
    gather_rows,
    message_sum,
    sum_rows,
)

import numpy as np
import pytest

from support.graphs import EDGE_INDEX, NUM_NODES

HEADS, CHANNELS = 2, 3


def _graph():
    """The test graph with a loop per node, sorted by target, as GATConv holds it."""
    ei = np.concatenate([EDGE_INDEX, np.stack([np.arange(NUM_NODES)] * 2)], 1)
    ei = ei[:, np.argsort(ei[1], kind="stable")]
    return EdgeGraph(dl.tensor(ei), NUM_NODES), dl.tensor(ei[0]), dl.tensor(ei[1])


GRAPH, SRC, DST = _graph()
EDGES = SRC.shape[0]


def _rand(*shape, dtype=dl.float32, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return dl.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=True)


def _composite_sum(v, index):
    return G.scatter(v, index, 0, NUM_NODES, "sum")


# (fused op, composite op, input shapes): the composites are the generic ops GAT used
CASES = {
    "gather_rows_src": (lambda x: gather_rows(x, GRAPH, "src"), lambda x: x[SRC],
                        [(NUM_NODES, HEADS)]),
    "gather_rows_dst": (lambda x: gather_rows(x, GRAPH, "dst"), lambda x: x[DST],
                        [(NUM_NODES, HEADS, CHANNELS)]),
    "sum_rows_src": (lambda v: sum_rows(v, GRAPH, "src"), lambda v: _composite_sum(v, SRC),
                     [(EDGES, HEADS)]),
    "sum_rows_dst": (lambda v: sum_rows(v, GRAPH, "dst"), lambda v: _composite_sum(v, DST),
                     [(EDGES, HEADS, CHANNELS)]),
    "edge_softmax": (lambda s: edge_softmax(s, GRAPH),
                     lambda s: G.softmax(s, DST, num_nodes=NUM_NODES), [(EDGES, HEADS)]),
    "message_sum_dst": (lambda x, a: message_sum(x, a, GRAPH, "dst"),
                        lambda x, a: _composite_sum(x[SRC] * a.unsqueeze(-1), DST),
                        [(NUM_NODES, HEADS, CHANNELS), (EDGES, HEADS)]),
    "message_sum_src": (lambda x, a: message_sum(x, a, GRAPH, "src"),
                        lambda x, a: _composite_sum(x[DST] * a.unsqueeze(-1), SRC),
                        [(NUM_NODES, HEADS, CHANNELS), (EDGES, HEADS)]),
    "edge_dot_dst": (lambda a, b: edge_dot(a, b, GRAPH, "dst"),
                     lambda a, b: (a[DST] * b[SRC]).sum(-1),
                     [(NUM_NODES, HEADS, CHANNELS)] * 2),
    "edge_dot_src": (lambda a, b: edge_dot(a, b, GRAPH, "src"),
                     lambda a, b: (a[SRC] * b[DST]).sum(-1),
                     [(NUM_NODES, HEADS, CHANNELS)] * 2),
}


@pytest.mark.parametrize("name", CASES)
def test_fused_matches_composite_float32(name):
    fused, composite, shapes = CASES[name]
    inputs = [_rand(*s, seed=i) for i, s in enumerate(shapes)]
    ours, theirs = fused(*inputs), composite(*inputs)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    weights = dl.tensor(np.random.default_rng(1).standard_normal(tuple(ours.shape)),
                        dtype=dl.float32)
    ours_g = dl.autograd.grad((ours * weights).sum(), inputs)
    theirs_g = dl.autograd.grad((theirs * weights).sum(), inputs)
    for a, b in zip(ours_g, theirs_g):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_fused_gradcheck_and_gradgradcheck_float64(name):
    fused, _, shapes = CASES[name]
    inputs = [_rand(*s, dtype=dl.float64, seed=i) for i, s in enumerate(shapes)]
    assert dl.autograd.gradcheck(fused, inputs)
    assert dl.autograd.gradgradcheck(fused, inputs)


def test_edge_softmax_large_scores_do_not_overflow():
    scores = dl.full((EDGES, 1), 1000.0)
    alpha = edge_softmax(scores, GRAPH).detach().numpy()[:, 0]
    per_target = np.bincount(DST.numpy(), alpha, NUM_NODES)
    has_edges = np.bincount(DST.numpy(), minlength=NUM_NODES) > 0
    np.testing.assert_allclose(per_target[has_edges], 1.0, rtol=1e-6)


def test_gat_keeps_its_graph_until_the_edges_change():
    layer = G.GATConv(4, 3, heads=2)
    x = _rand(NUM_NODES, 4)
    edge_index = dl.tensor(EDGE_INDEX)
    first = layer(x, edge_index).detach().numpy()
    kept = layer._graph(x, edge_index, None)[0]
    assert layer._graph(x, edge_index, None)[0] is kept
    assert layer._graph(x, dl.tensor(EDGE_INDEX), None)[0] is not kept
    np.testing.assert_array_equal(layer(x, edge_index).detach().numpy(), first)
    copied = copy.deepcopy(layer)  # the kept graph holds nothing that cannot be copied
    np.testing.assert_array_equal(copied(x, edge_index).detach().numpy(), first)
    edge_index[1, 0] = (int(edge_index[1, 0]) + 1) % (NUM_NODES - 1)  # bumps the version
    assert layer._graph(x, edge_index, None)[0] is not kept
    assert not np.allclose(layer(x, edge_index).detach().numpy(), first)


@pytest.mark.parametrize("layer", [G.GATConv, G.GATv2Conv])
def test_attention_layers_gradgradcheck_float64(layer):
    conv = layer(3, 2, heads=2).to(dl.float64)
    edge_index = dl.tensor(EDGE_INDEX)
    x = _rand(NUM_NODES, 3, dtype=dl.float64)
    assert dl.autograd.gradgradcheck(lambda x: conv(x, edge_index), [x])


@pytest.mark.parametrize("layer", [G.GATConv, G.GATv2Conv])
def test_attention_layers_on_a_graph_without_edges(layer):
    conv = layer(3, 2, heads=2, add_self_loops=False)
    x = _rand(4, 3)
    out = conv(x, dl.zeros(2, 0, dtype=dl.int64))
    np.testing.assert_array_equal(out.detach().numpy(), np.broadcast_to(conv.bias.detach()
                                                                        .numpy(), (4, 4)))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
