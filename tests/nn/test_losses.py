"""Loss modules against torch.nn's: forward values and input gradients for several options
and reductions each, weight tensors kept as buffers under torch's state_dict names, the
legacy size_average/reduce flags, argument errors and registration."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest
import torch
from torch_copy import Const, Float, Int, assert_same_state, check_pair


@dataclass(frozen=True)
class W:
    """A weight tensor argument, built in each library from the same values."""

    value: tuple


def _args(kwargs: dict, tensor) -> dict:
    return {k: tensor(np.asarray(v.value, np.float32)) if isinstance(v, W) else v
            for k, v in kwargs.items()}


def log_softmax_input(m, x, *rest):
    return m(x.log_softmax(2), *rest)


SIGNS = Const([1.0, -1.0, 1.0, -1.0], "float32")
PROBS = Float((3, 4), 0.05, 0.95)
TARGET01 = Float((3, 4), 0, 1, grad=False)

ROWS = [
    ("MSELoss", {}, (Float((3, 4)), Float((3, 4)))),
    ("MSELoss", {"reduction": "sum"}, (Float((2, 3)), Float((2, 3)))),
    ("L1Loss", {"reduction": "none"}, (Float((3, 4)), Float((3, 4)))),
    ("SmoothL1Loss", {"beta": 0.5}, (Float((3, 4)), Float((3, 4)))),
    ("SmoothL1Loss", {"reduction": "none"}, (Float((5,)), Float((5,)))),
    ("HuberLoss", {"delta": 0.7}, (Float((3, 4)), Float((3, 4)))),
    ("HuberLoss", {"reduction": "sum"}, (Float((3, 4)), Float((3, 4)))),
    ("CrossEntropyLoss", {}, (Float((4, 5)), Int((4,), 0, 5))),
    ("CrossEntropyLoss", {"weight": W((1, 2, 0.5, 1, 3)), "ignore_index": 2,
                          "label_smoothing": 0.1}, (Float((5, 5)), Const([2, 0, 4, 2, 1]))),
    ("CrossEntropyLoss", {"reduction": "none"}, (Float((2, 3, 4, 4)), Int((2, 4, 4), 0, 3))),
    ("CrossEntropyLoss", {"reduction": "sum", "label_smoothing": 0.2},
     (Float((4, 5)), Float((4, 5), 0, 1, grad=False))),
    ("NLLLoss", {}, (Float((4, 5)), Int((4,), 0, 5))),
    ("NLLLoss", {"weight": W((1, 2, 0.5)), "ignore_index": 1, "reduction": "none"},
     (Float((4, 3)), Const([1, 0, 2, 1]))),
    ("BCELoss", {}, (PROBS, TARGET01)),
    ("BCELoss", {"weight": W((1, 2, 0.5, 1)), "reduction": "sum"}, (PROBS, TARGET01)),
    ("BCEWithLogitsLoss", {}, (Float((3, 4)), TARGET01)),
    ("BCEWithLogitsLoss", {"weight": W(((1.0,), (2.0,), (0.5,))),
                           "pos_weight": W((1, 3, 0.5, 2)), "reduction": "none"},
     (Float((3, 4)), TARGET01)),
    ("KLDivLoss", {"reduction": "batchmean"}, (Float((3, 4)), Float((3, 4), 0.1, 1))),
    ("KLDivLoss", {"log_target": True, "reduction": "sum"}, (Float((3, 4)), Float((3, 4)))),
    ("PoissonNLLLoss", {}, (Float((3, 4)), Float((3, 4), 0, 3, grad=False))),
    ("PoissonNLLLoss", {"log_input": False, "full": True, "reduction": "none"},
     (Float((3, 4), 0.5, 2), Float((3, 4), 0, 4, grad=False))),
    ("GaussianNLLLoss", {}, (Float((3, 4)), Float((3, 4)), Float((3, 4), 0.1, 1))),
    ("GaussianNLLLoss", {"full": True, "eps": 1e-3, "reduction": "sum"},
     (Float((3, 4)), Float((3, 4)), Float((3, 1), 0.1, 1))),
    ("CosineEmbeddingLoss", {}, (Float((4, 5)), Float((4, 5)), SIGNS)),
    ("CosineEmbeddingLoss", {"margin": 0.2, "reduction": "none"},
     (Float((4, 5)), Float((4, 5)), SIGNS)),
    ("MarginRankingLoss", {"margin": 0.1}, (Float((4,)), Float((4,)), SIGNS)),
    ("HingeEmbeddingLoss", {}, (Float((4,)), SIGNS)),
    ("HingeEmbeddingLoss", {"margin": 0.5, "reduction": "sum"}, (Float((4,), 0, 1), SIGNS)),
    ("TripletMarginLoss", {}, (Float((4, 5)), Float((4, 5)), Float((4, 5)))),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1, "swap": True, "reduction": "none"},
     (Float((4, 5)), Float((4, 5)), Float((4, 5)))),
    ("MultiMarginLoss", {}, (Float((4, 5)), Int((4,), 0, 5))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": W((1, 2, 0.5, 1, 3))},
     (Float((4, 5)), Int((4,), 0, 5))),
    ("MultiLabelSoftMarginLoss", {}, (Float((3, 5)), Const([[0, 1, 1, 0, 0], [1, 0, 0, 0, 1],
                                                           [0, 0, 1, 1, 1]], "float32"))),
    ("MultiLabelSoftMarginLoss", {"weight": W((1, 2, 0.5, 1, 3)), "reduction": "none"},
     (Float((2, 5)), Const([[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]], "float32"))),
    ("CTCLoss", {}, (Float((6, 2, 4)), Const([[1, 2, 1], [3, 1, 0]]), Const([6, 5]),
                     Const([3, 2])), log_softmax_input),
    ("CTCLoss", {"blank": 3, "reduction": "sum", "zero_infinity": True},
     (Float((5, 2, 4)), Const([0, 1, 1, 2, 2, 2]), Const([5, 5]), Const([2, 4])),
     log_softmax_input),
]
IDS = [f"{row[0]}-{i}" for i, row in enumerate(ROWS)]


def _build(name: str, kwargs: dict):
    return (getattr(nn, name)(**_args(kwargs, dl.tensor)),
            getattr(torch.nn, name)(**_args(kwargs, torch.tensor)))


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_loss_matches_torch(row):
    name, kwargs, inputs, *call = row
    ours, theirs = _build(name, kwargs)
    assert_same_state(ours, theirs)
    check_pair(ours, theirs, inputs, call[0] if call else None)


@pytest.mark.parametrize("name, kwargs, buffers", [
    ("CrossEntropyLoss", {"weight": W((1, 2))}, ["weight"]),
    ("NLLLoss", {}, []),
    ("BCEWithLogitsLoss", {"weight": W((1, 2)), "pos_weight": W((3, 1))},
     ["weight", "pos_weight"]),
    ("MultiMarginLoss", {"weight": W((1, 2))}, ["weight"]),
])
def test_weights_are_buffers_that_move_with_the_module(name, kwargs, buffers):
    ours, _ = _build(name, kwargs)
    assert [k for k, _ in ours.named_buffers()] == buffers
    assert list(ours.parameters()) == []
    ours.double()
    assert all(b.dtype == dl.float64 for _, b in ours.named_buffers())


@pytest.mark.parametrize("size_average, reduce", [(False, None), (None, False), (True, True)])
def test_legacy_size_average_and_reduce_pick_torchs_reduction(size_average, reduce):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        ours = nn.MSELoss(size_average=size_average, reduce=reduce)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.MSELoss(size_average=size_average, reduce=reduce)
    assert ours.reduction == theirs.reduction


@pytest.mark.parametrize("build, match", [
    (lambda: nn.MSELoss(reduction="avg"), "reduction must be one of 'none', 'mean', 'sum'"),
    (lambda: nn.CrossEntropyLoss(reduction="batchmean"), "reduction must be one of"),
    (lambda: nn.MultiMarginLoss(p=3), "only p == 1 and p == 2"),
    (lambda: nn.TripletMarginLoss(margin=0), "margin must be greater than 0"),
    (lambda: nn.CTCLoss(reduction="max"), "reduction must be one of"),
])
def test_bad_loss_arguments_are_named(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_every_loss_is_registered_by_dlfree_nn():
    for name in nn.layers.LOSSES:
        assert dl.registry.losses.get(name) is getattr(nn, name), name
        assert dl.registry.losses.provider(name)["distribution"] == "dlfree-nn"
    assert len(nn.layers.LOSSES) == 18
