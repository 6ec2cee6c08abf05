"""Activation modules against torch.nn: forward values, input (and PReLU weight) gradients
and repr for several options each, in-place variants, and the implicit-dim warning."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest
import torch

from support.nn_tables import ACTIVATION_ROWS as ROWS
from support.torch_copy import FWD_TOL, GRAD_TOL, check_pair, to_numpy, torch_to_dl

IDS = [f"{name}-{i}" for i, (name, *_) in enumerate(ROWS)]


def _build(name, args, kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


@pytest.mark.parametrize("name, args, kwargs, spec", ROWS, ids=IDS)
def test_activation_matches_torch(name, args, kwargs, spec):
    ours, theirs = _build(name, args, kwargs)
    torch_to_dl(theirs, ours)
    check_pair(ours, theirs, (spec,))
    assert repr(ours) == repr(theirs)


INPLACE = [("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.1,)), ("ELU", (0.5,)), ("SELU", ()),
           ("CELU", (0.8,)), ("SiLU", ()), ("Mish", ()), ("Hardtanh", (-0.5, 0.5)),
           ("Hardsigmoid", ()), ("Hardswish", ()), ("Threshold", (0.2, 5.0))]


@pytest.mark.parametrize("name, args", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_activation_overwrites_its_input_and_backpropagates_as_torch(name, args):
    ours, theirs = _build(name, args, {"inplace": True})
    assert repr(ours) == repr(theirs)
    values = np.random.default_rng(0).uniform(-4, 4, (3, 5)).astype(np.float32)
    g = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    x, xt = dl.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    h, ht = x * 1, xt * 1
    y, yt = ours(h), theirs(ht)
    np.testing.assert_array_equal(to_numpy(h), to_numpy(y))
    np.testing.assert_allclose(to_numpy(y), to_numpy(yt), **FWD_TOL)
    y.backward(dl.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(to_numpy(x.grad), to_numpy(xt.grad), **GRAD_TOL)


@pytest.mark.parametrize("name", ["Softmax", "Softmin", "LogSoftmax"])
def test_implicit_dim_warns_and_picks_torchs_dim(name):
    values = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        ours = getattr(nn, name)()(dl.tensor(values))
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        theirs = getattr(torch.nn, name)()(torch.tensor(values))
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), **FWD_TOL)


def test_hardtanh_legacy_keywords_warn_and_apply():
    with pytest.warns(FutureWarning, match="min_value and max_value are deprecated"):
        layer = nn.Hardtanh(min_value=-0.25, max_value=0.5)
    assert (layer.min_val, layer.max_val) == (-0.25, 0.5)


@pytest.mark.parametrize("build, match", [
    (lambda: nn.GELU("fast"), "approximate must be one of 'none', 'tanh'"),
    (lambda: nn.Hardtanh(1.0, -1.0), "must not exceed max_val"),
    (lambda: nn.PReLU(0), "num_parameters must be an integer >= 1"),
])
def test_bad_activation_arguments_are_named(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_prelu_weight_is_a_parameter_filled_with_init():
    layer = nn.PReLU(4, init=0.3)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    np.testing.assert_array_equal(to_numpy(layer.weight), np.full(4, 0.3, np.float32))
