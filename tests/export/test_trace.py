"""`dlfree.export.trace`: a traced Graph reproduces the eager call, its passes shrink it
without changing outputs, and data-dependent Python control flow is warned about."""

from __future__ import annotations

import dlfree
import dlfree.nn as nn
from dlfree.export import (
    TracerWarning,
    eliminate_dead_code,
    fold_batch_norm,
    fold_constants,
    trace,
    unflatten_linears,
)

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


def test_max_pool_cnn_graph_matches_eager_on_new_data_without_warning(recwarn):
    # max pooling is recorded as one call, so its window picks are recomputed for each input
    dlfree.manual_seed(0)
    model = _digits_cnn(nn.MaxPool2d).eval()
    graph = trace(model, dlfree.randn(3, 1, 8, 8))
    assert not [w for w in recwarn if issubclass(w.category, TracerWarning)]
    assert any(node.op == "max_pool2d" for node in graph.nodes)
    x = dlfree.randn(3, 1, 8, 8)
    with dlfree.no_grad():
        np.testing.assert_allclose(np.asarray(graph(x)), np.asarray(model(x)),
                                   rtol=1e-6, atol=1e-7)


def test_op_given_data_computed_outside_the_graph_warns():
    # training-mode dropout draws its mask before its Function runs: the traced graph holds
    # that one mask, so tracing says the graph fits the traced call only
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    with pytest.warns(TracerWarning, match="dropout was given arrays"):
        trace(model, dlfree.randn(3, 4))


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


def test_linears_on_3d_inputs_lose_their_reshapes_at_every_size():
    model = _mlp().eval()
    graph = trace(model, dlfree.randn(2, 5, 8), dynamic_dims={0: {0: "b", 1: "s"}})
    assert [n.op for n in graph.nodes].count("reshape") == 4
    unflat = unflatten_linears(graph)
    assert [n.op for n in unflat.nodes] == ["linear", "relu", "linear"]
    for shape in ((2, 5, 8), (3, 9, 8)):
        x = dlfree.randn(*shape)
        with dlfree.no_grad():
            np.testing.assert_allclose(np.asarray(unflat(x)), np.asarray(model(x)),
                                       rtol=1e-6, atol=1e-6)
    # a reshape that is not the flattening of the leading dims stays
    def fn(x):
        return nn.functional.linear(x.reshape(-1, 8), model[0].weight).reshape(5, 2, 16)

    kept = unflatten_linears(trace(fn, dlfree.randn(2, 5, 8)))
    assert [n.op for n in kept.nodes].count("reshape") == 2


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


def test_batch_norm_in_training_mode_uses_each_calls_batch_and_is_not_folded():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6)).train()
    graph = trace(model, dlfree.randn(4, 5))
    assert [n.op for n in fold_batch_norm(graph).nodes] == [n.op for n in graph.nodes]
    x = dlfree.randn(4, 5) * 2.0 + 1.0
    with dlfree.no_grad():
        expected = np.asarray(model(x))
    np.testing.assert_allclose(np.asarray(graph(x)), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(expected.mean(0), 0, atol=1e-6)  # the new batch's statistics


def test_graph_runs_at_other_sizes_of_its_dynamic_dims():
    # the CNN flattens to (batch, 64): the reshape's size follows the batch as a SymInt
    dlfree.manual_seed(0)
    model = _digits_cnn(nn.MaxPool2d).eval()
    graph = trace(model, dlfree.randn(3, 1, 8, 8), dynamic_dims={0: {0: "batch"}})
    assert any(node.symbolic for node in graph.nodes)
    assert graph.shapes[graph.outputs[0]][1] == 10
    for batch in (1, 7):
        x = dlfree.randn(batch, 1, 8, 8)
        with dlfree.no_grad():
            np.testing.assert_allclose(np.asarray(graph(x)), np.asarray(model(x)),
                                       rtol=1e-5, atol=1e-6)


def test_encoder_graph_follows_batch_and_sequence_with_a_padding_mask():
    dlfree.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True).eval()

    def fn(x, pad):
        return layer(x, src_key_padding_mask=pad)

    pad = dlfree.zeros(2, 5, dtype=dlfree.bool)
    graph = trace(fn, dlfree.randn(2, 5, 16), pad,
                  dynamic_dims={0: {0: "batch", 1: "seq"}, 1: {0: "batch", 1: "seq"}})
    assert graph.input_shapes == [("batch", "seq", 16), ("batch", "seq")]
    x = dlfree.randn(3, 7, 16)
    mask = dlfree.tensor(np.arange(7)[None, :] >= np.array([[7], [4], [2]]))
    with dlfree.no_grad():
        np.testing.assert_allclose(np.asarray(graph(x, mask)), np.asarray(fn(x, mask)),
                                   rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="dynamic dim batch has size 3"):
        graph(x, mask[:2])


class _Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, ids):
        hidden = self.head(self.embed(ids))
        return hidden, (hidden.softmax(-1), [hidden.argmax(-1)])


def test_nested_outputs_are_flattened_and_nodes_name_their_layer():
    dlfree.manual_seed(0)
    model = _Tagger()
    ids = dlfree.tensor([[1, 2, 3], [4, 5, 9]])
    graph = trace(model, ids)
    assert len(graph.outputs) == 3
    layers = {node.op: node.layer for node in graph.nodes}
    assert layers["embedding"] == "embed" and layers["linear"] == "head"
    assert layers["argmax"] == ""
    hidden, (probs, [best]) = model(ids)
    for got, want in zip(graph(ids), (hidden, probs, best), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    other = dlfree.tensor([[0, 7, 8], [6, 6, 1]])
    np.testing.assert_array_equal(np.asarray(graph(other)[2]), np.asarray(model(other)[1][1][0]))


def test_a_made_tensor_that_follows_a_dynamic_dim_becomes_a_fill_or_range_or_is_refused():
    def uniform(x):
        return x + dlfree.ones(x.shape[0], 1)

    graph = trace(uniform, dlfree.randn(3, 2), dynamic_dims={0: {0: "batch"}})
    assert graph.nodes[0].op == "full"
    x = dlfree.randn(6, 2)
    np.testing.assert_allclose(np.asarray(graph(x)), np.asarray(x) + 1, rtol=1e-6)

    def ramp(x):
        return x + dlfree.arange(float(x.shape[0])).reshape(-1, 1)

    graph = trace(ramp, dlfree.randn(3, 2), dynamic_dims={0: {0: "batch"}})
    assert graph.nodes[0].op == "arange"
    np.testing.assert_allclose(np.asarray(graph(x)), np.asarray(ramp(x)), rtol=1e-6)

    def squares(x):
        return x + dlfree.tensor(np.arange(x.shape[0], dtype=np.float32) ** 2).reshape(-1, 1)

    with pytest.raises(ValueError, match="follows the dynamic dims and holds values"):
        trace(squares, dlfree.randn(3, 2), dynamic_dims={0: {0: "batch"}})


def test_a_size_that_is_not_affine_in_the_dynamic_dims_is_refused():
    def fn(x):
        return x.reshape(-1)[: x.shape[0] ** 2 % 5 + 1]

    with pytest.raises(ValueError, match="dynamic dims"):
        trace(fn, dlfree.randn(4, 4), dynamic_dims={0: {0: "n"}})
