"""dlfree.nn layers against torch.nn: one table row per configuration, built with the same
arguments in both libraries.

For every row: the same state_dict keys and shapes; forward values and the gradients of
the input and of every parameter after copying the weights torch -> dl.free and
dl.free -> torch (over several steps and in train and eval mode where the mode matters,
with the buffers compared after each step); the same repr. Dropout, whose random masks
cannot match torch's, is checked by its statistics instead.
"""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest
import torch

from support.nn_tables import LAYER_ROWS as ROWS
from support.specs import Fixed
from support.torch_copy import (
    assert_same_state,
    check_pair,
    dl_to_torch,
    to_numpy,
    torch_to_dl,
    zero_grads,
)


def _ids(rows):
    return [r.id for r in rows]


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_state_dict_names_and_shapes_match_torch(row):
    ours, theirs = row.build()
    names = [(k, tuple(v.shape)) for k, v in ours.state_dict().items()]
    assert names == [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert [(k, tuple(p.shape), p.requires_grad) for k, p in ours.named_parameters()] == \
        [(k, tuple(p.shape), p.requires_grad) for k, p in theirs.named_parameters()]


@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_forward_and_gradients_match_torch(row, direction):
    dl.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = row.build()
    if direction == "torch_to_dl":
        torch_to_dl(theirs, ours)
    else:
        dl_to_torch(ours, theirs)
    assert_same_state(ours, theirs)
    for mode in row.modes:
        ours.train(mode == "train")
        theirs.train(mode == "train")
        for step in range(row.steps):
            check_pair(ours, theirs, row.inputs, row.call, seed=step)
            zero_grads(ours, theirs)
            assert_same_state(ours, theirs)


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_repr_matches_torch(row):
    ours, theirs = row.build()
    assert repr(ours) == repr(theirs)



# ------------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_zeroes_a_fraction_p_and_its_gradient_uses_the_same_mask(p):
    dl.manual_seed(0)
    x = dl.randn(200, 500, requires_grad=True)
    y = nn.Dropout(p)(x)
    kept = to_numpy(y) != 0
    # 100,000 draws: the kept fraction's standard deviation is below 0.0016
    assert abs(kept.mean() - (1 - p)) < 0.007
    np.testing.assert_allclose(to_numpy(y)[kept], to_numpy(x)[kept] / (1 - p), rtol=1e-6)
    g = dl.randn(200, 500)
    y.backward(g)
    np.testing.assert_allclose(to_numpy(x.grad), to_numpy(g) * kept / (1 - p), rtol=1e-6)


def test_dropout2d_drops_whole_channels():
    dl.manual_seed(1)
    x = dl.randn(100, 100, 2, 2)
    y = to_numpy(nn.Dropout2d(0.3)(x))
    dropped = (y == 0).all(axis=(2, 3))
    assert ((y != 0).all(axis=(2, 3)) | dropped).all()
    # 10,000 channels: the dropped fraction's standard deviation is below 0.005
    assert abs(dropped.mean() - 0.3) < 0.02
    kept = ~dropped
    np.testing.assert_allclose(y[kept], to_numpy(x)[kept] / 0.7, rtol=1e-6)


def test_alpha_dropout_keeps_mean_and_variance_with_torchs_constants():
    dl.manual_seed(2)
    y = to_numpy(nn.AlphaDropout(0.2)(dl.randn(200, 500)))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    # on zeros the output holds just two values: kept (the shift) and dropped entries
    ours = np.unique(to_numpy(nn.AlphaDropout(0.2)(dl.zeros(50, 50))))
    theirs = np.unique(torch.nn.AlphaDropout(0.2)(torch.zeros(50, 50)).numpy())
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_inplace_dropout_overwrites_its_input():
    dl.manual_seed(3)
    x = dl.randn(10, 10, requires_grad=True) * 1
    y = nn.Dropout(0.5, inplace=True)(x)
    assert np.array_equal(to_numpy(x), to_numpy(y)) and (to_numpy(x) == 0).any()


def test_embedding_bag_scales_gradients_by_frequency():
    """Each row's gradient divided by its index's count in the batch, as torch documents and
    its Embedding does (its CPU EmbeddingBag miscounts here: pytorch#190063)."""
    indices = [[0, 2, 2], [5, 2, 1]]
    ours = nn.EmbeddingBag(6, 3, mode="sum", scale_grad_by_freq=True)
    theirs = torch.nn.Embedding(6, 3, scale_grad_by_freq=True)
    torch_to_dl(theirs, ours)
    check_pair(ours, theirs, (Fixed(indices),),
               call=lambda m, x: m(x) if isinstance(m, nn.Module) else m(x).sum(1))


# ---------------------------------------------------------------- pretrained embeddings
@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_from_pretrained_matches_torch_and_shares_the_table(freeze):
    table = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    weights = dl.tensor(table)
    ours = nn.Embedding.from_pretrained(weights, freeze=freeze, padding_idx=1)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze,
                                                padding_idx=1)
    assert np.shares_memory(ours.weight.array, weights.array)
    assert ours.weight.requires_grad is not freeze
    assert_same_state(ours, theirs)
    assert repr(ours) == repr(theirs)
    check_pair(ours, theirs, (Fixed([[1, 0, 4], [1, 1, 2]]),), grad=not freeze)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_from_pretrained_matches_torch(mode):
    table = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)
    ours = nn.EmbeddingBag.from_pretrained(dl.tensor(table), freeze=False, mode=mode)
    theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), freeze=False, mode=mode)
    assert repr(ours) == repr(theirs)
    check_pair(ours, theirs, (Fixed([5, 0, 2, 2, 3]), Fixed([0, 1, 1])),
               call=lambda m, x, off: m(x, off))


# ------------------------------------------------------------------------ factory kwargs
@pytest.mark.parametrize("build", [
    lambda **kw: nn.Linear(3, 2, **kw), lambda **kw: nn.Bilinear(2, 3, 2, **kw),
    lambda **kw: nn.Conv2d(2, 4, 3, **kw), lambda **kw: nn.ConvTranspose1d(2, 3, 2, **kw),
    lambda **kw: nn.Embedding(4, 2, **kw), lambda **kw: nn.EmbeddingBag(4, 2, **kw),
    lambda **kw: nn.BatchNorm1d(3, **kw), lambda **kw: nn.InstanceNorm2d(3, affine=True, **kw),
    lambda **kw: nn.LayerNorm(4, **kw), lambda **kw: nn.GroupNorm(2, 4, **kw),
    lambda **kw: nn.RMSNorm(4, **kw), lambda **kw: nn.PReLU(3, **kw),
], ids=["Linear", "Bilinear", "Conv2d", "ConvTranspose1d", "Embedding", "EmbeddingBag",
        "BatchNorm1d", "InstanceNorm2d", "LayerNorm", "GroupNorm", "RMSNorm", "PReLU"])
def test_factory_kwargs_set_dtype_and_device_of_parameters_and_float_buffers(build):
    layer = build(device="cpu", dtype=dl.float64)
    for name, tensor in layer.state_dict().items():
        expected = dl.int64 if name == "num_batches_tracked" else dl.float64
        assert tensor.dtype == expected, name
        assert tensor.device == dl.device("cpu"), name


# -------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("build, error, match", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "divisible by groups"),
    (lambda: nn.Conv2d(2, 2, 3, stride=2, padding="same"), ValueError, "strided"),
    (lambda: nn.Conv2d(2, 2, 3, padding="full"), ValueError, "'same', 'valid'"),
    (lambda: nn.Conv1d(2, 2, 3, padding_mode="mirror"), ValueError, "'circular'"),
    (lambda: nn.Conv2d(2, 2, (3, 3, 3)), ValueError, "kernel_size must be an int or 2 ints"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), ValueError, "'zeros'"),
    (lambda: nn.Linear(-1, 3), ValueError, "in_features must be an integer >= 0"),
    (lambda: nn.Dropout(1.5), ValueError, "between 0 and 1"),
    (lambda: nn.Embedding(5, 3, padding_idx=5), ValueError, r"within \[-5, 5\)"),
    (lambda: nn.Embedding(5, 3, sparse=True), ValueError, "sparse"),
    (lambda: nn.EmbeddingBag(5, 3, mode="median"), ValueError, "'sum', 'mean', 'max'"),
    (lambda: nn.GroupNorm(3, 4), ValueError, "divisible by num_groups"),
    (lambda: nn.Unflatten(1, 6), TypeError, "tuple or list of ints"),
    (lambda: nn.PixelShuffle(0), ValueError, "upscale_factor must be an integer >= 1"),
])
def test_bad_constructor_arguments_are_named(build, error, match):
    with pytest.raises(error, match=match):
        build()


@pytest.mark.parametrize("call, error, match", [
    (lambda: nn.EmbeddingBag(5, 2)(dl.tensor([1, 2]), dl.tensor([0]), dl.ones(2)),
     ValueError, "only supported for mode='sum'"),
    (lambda: nn.EmbeddingBag(5, 2)(dl.tensor([1, 2])), dl.ShapeError, "needs 1-d offsets"),
    (lambda: nn.EmbeddingBag(5, 2)(dl.tensor([1, 2]), dl.tensor([1])), ValueError,
     "must start at 0"),
    (lambda: nn.EmbeddingBag(5, 2)(dl.tensor([[1, 2]]), dl.tensor([0])), ValueError,
     "offsets must be None"),
    (lambda: nn.ConvTranspose1d(1, 1, 3, stride=2)(dl.ones(1, 1, 4), output_size=[12]),
     ValueError, r"valid sizes range from \(9,\) to \(10,\)"),
    (lambda: nn.BatchNorm1d(3)(dl.ones(2, 3, 4, 4)), dl.ShapeError, "2 or 3-d input"),
    (lambda: nn.InstanceNorm2d(3, affine=True)(dl.ones(2, 4, 3, 3)), dl.ShapeError,
     r"num_features \(3\)"),
])
def test_bad_forward_inputs_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_instance_norm_without_affine_warns_on_a_channel_mismatch():
    with pytest.warns(UserWarning, match="num_features is unused"):
        nn.InstanceNorm2d(3)(dl.randn(2, 4, 3, 3))


# -------------------------------------------------------------------------- registration
def test_every_layer_is_registered_by_dlfree_nn():
    structural = {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                  "Identity", "RNN", "RNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell",
                  "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
                  "TransformerDecoderLayer", "TransformerDecoder", "Transformer"}
    names = set(nn.layers.LAYERS) | structural
    assert set(dl.registry.layers.names()) >= names
    for name in sorted(names):
        assert dl.registry.layers.get(name) is getattr(nn, name), name
        assert dl.registry.layers.provider(name)["distribution"] == "dlfree-nn", name
    assert dl.registry.layers.provider("Linear")["distribution"] == "dlfree-nn"


def test_a_registered_layer_is_created_from_its_config():
    layer = dl.registry.layers.create("Conv1d", in_channels=2, out_channels=3, kernel_size=2)
    assert isinstance(layer, nn.Conv1d) and tuple(layer.weight.shape) == (3, 2, 2)
    assert layer.get_config()["padding_mode"] == "zeros"
