"""`dlfree.export.trace`: a traced Graph reproduces the eager call, its passes shrink it
without changing outputs, and data-dependent Python control flow is warned about."""

from __future__ import annotations

import dlfree
import dlfree.nn as nn
from dlfree.export import TracerWarning, eliminate_dead_code, fold_batch_norm, fold_constants, trace

import numpy as np
import pytest


def _mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _digits_cnn(pool=nn.AvgPool2d):
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), pool(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), pool(2),
                         nn.Flatten(), nn.Linear(16 * 2 * 2, 10))


def _check(model, *inputs, rtol=1e-5, dynamic_dims=None):
    model.eval()
    graph = trace(model, *inputs, dynamic_dims=dynamic_dims)
    with dlfree.no_grad():
        expected = model(*inputs)
    got = graph(*inputs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=rtol, atol=1e-6)
    return graph


def test_mlp_graph_matches_eager_and_prints():
    dlfree.manual_seed(0)
    graph = _check(_mlp(), dlfree.randn(5, 8))
    text = str(graph)
    assert "param %0.weight" in text and "return %" in text
    assert len(graph.nodes) >= 3


def test_digits_cnn_graph_matches_eager_on_new_data():
    dlfree.manual_seed(0)
    model = _digits_cnn()
    graph = _check(model, dlfree.randn(3, 1, 8, 8))
    x = dlfree.randn(3, 1, 8, 8)
    with dlfree.no_grad():
        np.testing.assert_allclose(np.asarray(graph(x)), np.asarray(model(x)),
                                   rtol=1e-5, atol=1e-6)


def test_op_given_data_computed_outside_the_graph_warns():
    # max pooling picks its window maxima before its Function runs: the traced graph holds
    # those picks, so tracing says the graph fits the traced input only
    dlfree.manual_seed(0)
    with pytest.warns(TracerWarning, match="_tilepick was given arrays"):
        trace(_digits_cnn(nn.MaxPool2d), dlfree.randn(3, 1, 8, 8))


def test_transformer_encoder_layer_graph_matches_eager():
    dlfree.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)
    _check(layer, dlfree.randn(2, 5, 16), rtol=1e-4)


def test_dynamic_dims_are_named_and_fixed_dims_checked():
    dlfree.manual_seed(0)
    graph = trace(_mlp(), dlfree.randn(5, 8), dynamic_dims={0: {0: "batch"}})
    assert graph.input_shapes == [("batch", 8)]
    assert "%input_0: [batch, 8]" in str(graph)
    with pytest.raises(ValueError, match="input_0 has shape"):
        graph(dlfree.randn(5, 9))
    with pytest.raises(ValueError, match="dynamic_dims names dim 2"):
        trace(_mlp(), dlfree.randn(5, 8), dynamic_dims={0: {2: "x"}})


def test_dead_code_removal_drops_unused_nodes():
    def fn(x):
        _ = x.exp() * 3.0  # computed, never returned
        return x.sin()

    graph = trace(fn, dlfree.randn(4))
    pruned = eliminate_dead_code(graph)
    assert len(pruned.nodes) == 1 < len(graph.nodes)
    x = dlfree.randn(4)
    np.testing.assert_allclose(np.asarray(pruned(x)), np.asarray(x.sin()), rtol=1e-6)


def test_constant_folding_evaluates_constant_subgraphs():
    table = dlfree.arange(4.0)

    def fn(x):
        return x + (table * 2.0).exp()

    graph = trace(fn, dlfree.randn(4))
    folded = fold_constants(graph)
    assert len(folded.nodes) == 1 < len(graph.nodes)
    x = dlfree.randn(4)
    np.testing.assert_allclose(np.asarray(folded(x)), np.asarray(fn(x)), rtol=1e-6)


def test_python_value_during_tracing_warns_with_the_users_line():
    def fn(x):
        if x.sum() > 0:  # data-dependent branch
            return x * 2.0
        return x

    with pytest.warns(TracerWarning) as record:
        trace(fn, dlfree.ones(3))
    assert record[0].filename == __file__
    assert record[0].lineno == fn.__code__.co_firstlineno + 1


def _trained_stats(model, x):
    """Run `model` in training mode once, so its batch norms hold nontrivial running
    statistics, then switch it to eval mode."""
    model.train()
    with dlfree.no_grad():
        model(x * 3.0 + 1.0)
    return model.eval()


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU()), (3, 2, 6, 6)),
    (lambda: nn.Sequential(nn.Conv2d(2, 4, 3, bias=False), nn.BatchNorm2d(4)), (3, 2, 6, 6)),
    (lambda: nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Tanh()), (4, 5)),
])
def test_batch_norm_folds_into_the_preceding_layer(make, shape):
    dlfree.manual_seed(0)
    x = dlfree.randn(*shape)
    model = _trained_stats(make(), x)
    graph = trace(model, x)
    folded = fold_batch_norm(graph)
    assert len(folded.nodes) == len(graph.nodes) - 1
    assert "normalize" not in {n.op for n in folded.nodes}
    y = dlfree.randn(*shape)
    with dlfree.no_grad():
        expected = np.asarray(model(y))
    np.testing.assert_allclose(np.asarray(folded(y)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(graph(y)), expected, rtol=1e-5, atol=1e-6)


def test_batch_norm_in_training_mode_is_not_folded():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6)).train()
    with pytest.warns(TracerWarning, match="normalize"):
        graph = trace(model, dlfree.randn(4, 5))
    live = eliminate_dead_code(graph)  # drops the running-statistics updates
    assert [n.op for n in fold_batch_norm(graph).nodes] == [n.op for n in live.nodes]
    assert "normalize" in {n.op for n in live.nodes}
