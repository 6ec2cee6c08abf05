"""Every graph layer against PyTorch Geometric's, weights copied by state_dict name, on a
batch of three random graphs with isolated nodes, a self loop and a repeated edge:
forward 1e-5, gradients of the inputs and parameters 1e-4 (float32), then gradcheck in
float64 and a save/load round trip of the model file."""

from __future__ import annotations

import warnings

import dlfree as dl
from dlfree import nn
from dlfree.nn import geometric as G

import numpy as np
import pytest
import torch

from support.graphs import EDGES, NUM_EDGES, NUM_NODES
from support.pyg import gcn_norm as pyg_gcn_norm
from support.pyg import nn as pyg
from support.specs import Float, make_arrays
from support.torch_copy import check_pair, torch_to_dl

X = Float((NUM_NODES, 3))
WEIGHT = Float((NUM_EDGES,), 0.5, 1.5)  # positive edge weights
ATTR = Float((NUM_EDGES, 2))


def mlp(lib, sizes=(3, 8, 4)):
    """A two-layer MLP of `lib` (dlfree.nn or torch.nn) for GIN and EdgeConv."""
    return lib.Sequential(lib.Linear(sizes[0], sizes[1]), lib.ReLU(),
                          lib.Linear(sizes[1], sizes[2]))


# (id, build(G, nn) -> layer, inputs after x and edge_index)
LAYERS = [
    ("gcn", lambda g, n: g.GCNConv(3, 4), []),
    ("gcn_weighted_improved", lambda g, n: g.GCNConv(3, 4, improved=True), [WEIGHT]),
    ("gcn_no_loops_no_bias", lambda g, n: g.GCNConv(3, 4, add_self_loops=False, bias=False),
     []),
    ("gcn_unnormalized", lambda g, n: g.GCNConv(3, 4, normalize=False), [WEIGHT]),
    ("gat", lambda g, n: g.GATConv(3, 4, heads=2), []),
    ("gat_mean_slope_edges", lambda g, n: g.GATConv(3, 4, heads=3, concat=False,
                                                    negative_slope=0.1, edge_dim=2), [ATTR]),
    ("gat_no_loops", lambda g, n: g.GATConv(3, 2, add_self_loops=False), []),
    ("gatv2", lambda g, n: g.GATv2Conv(3, 4, heads=2), []),
    ("gatv2_edges_shared_mean", lambda g, n: g.GATv2Conv(3, 4, heads=2, concat=False,
                                                         edge_dim=2, share_weights=True),
     [ATTR]),
    ("sage_mean", lambda g, n: g.SAGEConv(3, 4), []),
    ("sage_max_normalize", lambda g, n: g.SAGEConv(3, 4, aggr="max", normalize=True), []),
    ("sage_sum_project", lambda g, n: g.SAGEConv(3, 4, aggr="sum", project=True), []),
    ("sage_no_root", lambda g, n: g.SAGEConv(3, 4, root_weight=False, bias=False), []),
    ("gin", lambda g, n: g.GINConv(mlp(n)), []),
    ("gin_train_eps", lambda g, n: g.GINConv(mlp(n), eps=0.3, train_eps=True), []),
    ("gine_edge_dim", lambda g, n: g.GINEConv(mlp(n), train_eps=True, edge_dim=2), [ATTR]),
    ("gine_same_width", lambda g, n: g.GINEConv(mlp(n, (3, 5, 4))),
     [Float((NUM_EDGES, 3))]),
    ("cheb_k1", lambda g, n: g.ChebConv(3, 4, K=1), []),
    ("cheb_k3_weighted", lambda g, n: g.ChebConv(3, 4, K=3), [WEIGHT]),
    ("cheb_rw_k4", lambda g, n: g.ChebConv(3, 4, K=4, normalization="rw", bias=False), []),
    ("graphconv", lambda g, n: g.GraphConv(3, 4), []),
    ("graphconv_mean_weighted", lambda g, n: g.GraphConv(3, 4, aggr="mean"), [WEIGHT]),
    ("edgeconv_max", lambda g, n: g.EdgeConv(mlp(n, (6, 8, 4))), []),
    ("edgeconv_mean", lambda g, n: g.EdgeConv(mlp(n, (6, 8, 4)), aggr="mean"), []),
    ("transformer", lambda g, n: g.TransformerConv(3, 4, heads=2), []),
    ("transformer_beta_edges", lambda g, n: g.TransformerConv(3, 4, heads=2, beta=True,
                                                              edge_dim=2), [ATTR]),
    ("transformer_mean_no_root", lambda g, n: g.TransformerConv(3, 4, heads=3, concat=False,
                                                                root_weight=False), []),
]
PARAMS = [pytest.param(build, extra, id=name) for name, build, extra in LAYERS]
# gradcheck in the default run for one row per layer, the richest; the others marked slow
GRADCHECK_DEFAULT = {"gcn_weighted_improved", "gat_mean_slope_edges", "gatv2",
                     "sage_max_normalize", "gin_train_eps", "gine_edge_dim",
                     "cheb_k3_weighted", "graphconv_mean_weighted", "edgeconv_max",
                     "transformer_beta_edges"}
GRADCHECK_PARAMS = [pytest.param(build, extra, id=name, marks=() if name in GRADCHECK_DEFAULT
                                 else (pytest.mark.slow,)) for name, build, extra in LAYERS]


def _pair(build):
    torch.manual_seed(0)
    theirs = build(pyg, torch.nn)
    ours = build(G, nn)
    torch_to_dl(theirs, ours)
    return ours, theirs


def _call(module, x, edge_index, *extra):
    if extra and isinstance(module, (G.ChebConv, pyg.ChebConv)):  # weight after edges
        return module(x, edge_index, extra[0])
    return module(x, edge_index, *extra)


@pytest.mark.parametrize("build, extra", PARAMS)
def test_layer_matches_pyg(build, extra):
    ours, theirs = _pair(build)
    check_pair(ours, theirs, [X, EDGES, *extra], call=_call)


@pytest.mark.parametrize("build, extra", GRADCHECK_PARAMS)
def test_layer_gradcheck_float64(build, extra):
    ours, _ = _pair(build)
    ours.double()
    arrays = make_arrays([X, EDGES, *extra], seed=3)
    x = dl.tensor(arrays[0], requires_grad=True)
    edge_index = dl.tensor(arrays[1])
    rest = [dl.tensor(a, requires_grad=True) for a in arrays[2:]]
    assert dl.autograd.gradcheck(lambda x, *r: _call(ours, x, edge_index, *r), [x, *rest],
                                 eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("build, extra", PARAMS)
def test_layer_round_trips_through_a_model_file(build, extra, tmp_path):
    ours, _ = _pair(build)
    ours.eval()
    path = tmp_path / "layer.safetensors"
    dl.save(ours, path)
    loaded = dl.load(path)
    assert type(loaded) is type(ours)
    arrays = make_arrays([X, EDGES, *extra], seed=5)
    inputs = [dl.tensor(a.astype(np.float32) if a.dtype.kind == "f" else a) for a in arrays]
    np.testing.assert_array_equal(_call(loaded, *inputs).detach().numpy(),
                                  _call(ours, *inputs).detach().numpy())


def test_gcn_cached_keeps_the_first_graph():
    ours, theirs = _pair(lambda g, n: g.GCNConv(3, 4, cached=True))
    x, ei = make_arrays([X, EDGES])
    first = ours(dl.tensor(x.astype(np.float32)), dl.tensor(ei))
    # a different graph is ignored once the normalised one is cached, as in PyG
    again = ours(dl.tensor(x.astype(np.float32)), dl.tensor(ei[:, :3]))
    np.testing.assert_array_equal(first.detach().numpy(), again.detach().numpy())
    theirs(torch.tensor(x, dtype=torch.float32), torch.tensor(ei))
    ref = theirs(torch.tensor(x, dtype=torch.float32), torch.tensor(ei[:, :3]))
    np.testing.assert_allclose(again.detach().numpy(), ref.detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_gat_attention_dropout_acts_in_training_only():
    layer = G.GATConv(3, 4, heads=2, dropout=0.5)
    x, ei = (dl.tensor(a) for a in make_arrays([X, EDGES]))
    x = x.float()
    layer.eval()
    _, (edges, alpha) = layer(x, ei, return_attention_weights=True)
    # each node's attention sums to 1 over its incoming edges and its own loop
    sums = G.scatter(alpha, edges[1], 0, NUM_NODES)
    np.testing.assert_allclose(sums.detach().numpy(), 1.0, rtol=1e-5)
    layer.train()
    dl.manual_seed(0)
    _, (_, dropped) = layer(x, ei, return_attention_weights=True)
    dropped, alpha = dropped.detach().numpy(), alpha.detach().numpy()
    kept = dropped != 0
    assert 0.2 < kept.mean() < 0.8
    np.testing.assert_allclose(dropped[kept], 2 * alpha[kept], rtol=1e-5)


@pytest.mark.parametrize("call, match", [
    (lambda: G.GCNConv(3, 4)(dl.randn(4, 3), dl.tensor([0, 1])), r"GCNConv: edge_index must "
     r"be a \(2, E\) tensor"),
    (lambda: G.GCNConv(3, 4)(dl.randn(4, 3), dl.tensor([[0.0], [1.0]])), r"must be int64"),
    (lambda: G.SAGEConv(3, 4, aggr="median"), r"SAGEConv: aggr must be one of"),
    (lambda: G.GATConv(3, 0), r"GATConv: out_channels must be an integer >= 1"),
    (lambda: G.ChebConv(3, 4, K=2, normalization=None)(dl.randn(3, 3),
                                                       dl.tensor([[0, 1], [1, 2]])),
     r"normalization=None needs lambda_max"),
])
def test_bad_arguments_say_what_is_valid(call, match):
    with pytest.raises((ValueError, dl.DLFreeError), match=match):
        call()


def test_pyg_imports_without_its_compiled_extensions():
    import torch_geometric.typing as typing

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not typing.WITH_TORCH_SCATTER and not typing.WITH_TORCH_SPARSE


def test_gcn_with_two_loops_on_a_node_uses_the_last_and_differentiates_it_alone():
    edge_index = dl.tensor([[0, 1, 1, 1], [1, 0, 1, 1]])
    weight = dl.tensor([1.0, 2.0, 3.0, 4.0], dtype=dl.float64, requires_grad=True)
    _, ours = G.gcn_norm(edge_index, weight, 2)
    _, theirs = pyg_gcn_norm(torch.tensor(edge_index.numpy()),
                             torch.tensor(weight.detach().numpy()), 2)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=1e-12)
    assert dl.autograd.gradcheck(lambda w: G.gcn_norm(edge_index, w, 2)[1], [weight])
    ours.sum().backward()
    assert weight.grad.numpy()[2] == 0  # the overwritten loop has no influence
