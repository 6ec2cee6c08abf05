"""Lazy layers against torch.nn's: repr and keys before the first call, then the plain layer
they become (class, repr, shapes), forward and gradients after copying torch's weights,
parameters kept in place for an optimizer built before, and the model file."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn

import pytest
import torch

from support.specs import Float
from support.torch_copy import check_pair, torch_to_dl

CASES = [
    ("LazyLinear", (3,), {}, Float((2, 5))),
    ("LazyLinear", (4,), {"bias": False}, Float((2, 3, 6))),
    ("LazyConv1d", (4, 3), {"padding": 1}, Float((2, 3, 7))),
    ("LazyConv2d", (4, (3, 2)), {"stride": 2, "groups": 2}, Float((1, 2, 6, 5))),
    ("LazyConv3d", (2, 2), {"bias": False, "padding_mode": "replicate", "padding": 1},
     Float((1, 3, 3, 3, 3))),
]


@pytest.mark.parametrize("name, args, kwargs, spec", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_lazy_layer_becomes_the_plain_one_as_in_torch(name, args, kwargs, spec, tmp_path):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    before = list(ours.parameters())
    opt = dl.optim.SGD(before, lr=0.1)
    calls = []
    ours.register_forward_hook(lambda m, i, o: calls.append(1))
    x = dl.zeros(*spec.shape)
    ours(x)
    theirs(torch.zeros(*spec.shape))
    assert calls == [1] and type(ours).__name__ == type(theirs).__name__
    assert repr(ours) == repr(theirs)
    assert [p is q for p, q in zip(ours.parameters(), before)] == [True] * len(before)
    torch_to_dl(theirs, ours)
    check_pair(ours, theirs, [spec])
    opt.step()  # the optimizer built before the first call updates the filled parameters
    dl.save(ours, tmp_path / "m")
    assert type(dl.load(tmp_path / "m")).__name__ == type(theirs).__name__


def test_a_too_small_input_is_named():
    with pytest.raises(dl.ShapeError, match="LazyConv2d: the input of shape \\(3, 4\\)"):
        nn.LazyConv2d(2, 3)(dl.zeros(3, 4))
