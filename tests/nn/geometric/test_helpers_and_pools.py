"""The edge_index helpers, `scatter`/`softmax`, batching and the pools against PyTorch
Geometric (and networkx for a graph's degrees), values and gradients."""

from __future__ import annotations

import warnings

import dlfree as dl
from dlfree.nn import geometric as G

import networkx as nx
import numpy as np
import pytest
import torch

from support.graphs import BATCH, BATCH_SPEC, EDGE_INDEX, EDGES, NUM_EDGES, NUM_NODES
from support.pyg import gcn_norm as pyg_gcn_norm
from support.pyg import nn as pyg
from support.pyg import torch_geometric, utils
from support.specs import Float
from support.torch_copy import check_pair

E = torch.tensor(EDGE_INDEX)
W = np.random.default_rng(7).uniform(0.5, 1.5, NUM_EDGES)


def _same_edges(ours, theirs):
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    if theirs[1] is not None:
        np.testing.assert_allclose(ours[1].detach().numpy(), theirs[1].numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, call", [
    ("remove_self_loops", lambda m, e, w: m.remove_self_loops(e, w)),
    ("add_self_loops", lambda m, e, w: m.add_self_loops(e, w, fill_value=0.5,
                                                         num_nodes=NUM_NODES)),
    ("add_self_loops_mean", lambda m, e, w: m.add_self_loops(e, w, fill_value="mean",
                                                              num_nodes=NUM_NODES)),
    ("add_remaining_self_loops", lambda m, e, w: m.add_remaining_self_loops(e, w, 2.0,
                                                                             NUM_NODES)),
    ("coalesce_mean", lambda m, e, w: m.coalesce(e, w, NUM_NODES, reduce="mean")),
    ("to_undirected", lambda m, e, w: m.to_undirected(e, w, NUM_NODES)),
])
def test_edge_helpers_match_pyg(name, call):
    ours = call(G, dl.tensor(EDGE_INDEX), dl.tensor(W))
    theirs = call(utils, E, torch.tensor(W))
    _same_edges(ours, theirs)


def test_gcn_norm_matches_pyg_and_its_gradient_reaches_the_weights():
    w = dl.tensor(W, requires_grad=True)
    ours = G.gcn_norm(dl.tensor(EDGE_INDEX), w, NUM_NODES)
    _same_edges(ours, pyg_gcn_norm(E, torch.tensor(W), NUM_NODES))
    assert dl.autograd.gradcheck(lambda w: G.gcn_norm(dl.tensor(EDGE_INDEX), w,
                                                      NUM_NODES)[1], [w])


def test_degree_matches_networkx():
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(range(NUM_NODES))
    graph.add_edges_from(EDGE_INDEX.T.tolist())
    ours = G.degree(dl.tensor(EDGE_INDEX[1]), NUM_NODES).numpy()
    np.testing.assert_array_equal(ours, [graph.in_degree(n) for n in range(NUM_NODES)])
    assert ours.dtype == np.float32


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "mul"])
def test_scatter_matches_pyg_with_empty_groups(reduce):
    src = np.random.default_rng(1).standard_normal((NUM_EDGES, 3))
    check_pair(lambda s, i: G.scatter(s, i, 0, NUM_NODES + 2, reduce),
               lambda s, i: utils.scatter(s, i, 0, NUM_NODES + 2, reduce),
               [Float(src.shape, distinct=True), EDGES], call=lambda f, s, e: f(s, e[1]))


def test_softmax_matches_pyg():
    check_pair(lambda s, i: G.softmax(s, i, num_nodes=NUM_NODES),
               lambda s, i: utils.softmax(s, i, num_nodes=NUM_NODES),
               [Float((NUM_EDGES, 2), -30.0, 30.0), EDGES], call=lambda f, s, e: f(s, e[1]))


def test_batch_concatenates_and_renumbers():
    graphs = [G.Data(x=dl.randn(n, 2), edge_index=dl.tensor([[0, n - 1], [n - 1, 0]]),
                     y=dl.tensor(i)) for i, n in enumerate((3, 1, 4))]
    batch = G.Batch.from_data_list(graphs)
    assert batch.num_graphs == 3 and batch.num_nodes == 8 and tuple(batch.x.shape) == (8, 2)
    np.testing.assert_array_equal(batch.batch.numpy(), [0, 0, 0, 1, 2, 2, 2, 2])
    np.testing.assert_array_equal(batch.ptr.numpy(), [0, 3, 4, 8])
    np.testing.assert_array_equal(batch.edge_index.numpy(),
                                  [[0, 2, 3, 3, 4, 7], [2, 0, 3, 3, 7, 4]])
    np.testing.assert_array_equal(batch.y.numpy(), [0, 1, 2])


@pytest.mark.parametrize("pool", ["global_add_pool", "global_mean_pool", "global_max_pool"])
def test_global_pools_match_pyg(pool):
    check_pair(lambda x, b: getattr(G, pool)(x, b),
               lambda x, b: getattr(pyg, pool)(x, b),
               [Float((NUM_NODES, 3), distinct=True), BATCH_SPEC], call=lambda f, *a: f(*a))
    x = dl.randn(4, 3)
    np.testing.assert_allclose(getattr(G, pool)(x).numpy(),
                               getattr(pyg, pool)(torch.tensor(x.numpy()), None).numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("k", [4, 7])  # fewer and more than the largest graph's 6 nodes
def test_sort_aggregation_matches_pyg(k):
    check_pair(G.SortAggregation(k), pyg.aggr.SortAggregation(k),
               [Float((NUM_NODES, 3), distinct=True), BATCH_SPEC])


def test_global_attention_matches_pyg():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyG deprecates it for AttentionalAggregation
        theirs = pyg.GlobalAttention(torch.nn.Linear(3, 1), torch.nn.Linear(3, 5))
    ours = G.GlobalAttention(dl.nn.Linear(3, 1), dl.nn.Linear(3, 5))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_pair(ours, theirs, [Float((NUM_NODES, 3)), BATCH_SPEC])


def test_a_batch_feeds_a_layer_and_a_pool():
    graphs = [G.Data(x=dl.randn(n, 3), edge_index=dl.tensor([[0, 1], [1, 0]])) for n in (2, 5)]
    batch = G.Batch.from_data_list(graphs)
    out = G.global_mean_pool(G.GINConv(dl.nn.Linear(3, 4))(batch.x, batch.edge_index),
                             batch.batch)
    assert tuple(out.shape) == (2, 4)


def test_pyg_is_the_pinned_oracle():
    assert torch_geometric.__version__ == "2.8.1"
    assert BATCH.max() == 2
