"""Loss modules against torch.nn's: forward values and input gradients for several options
and reductions each, weight tensors kept as buffers under torch's state_dict names, the
legacy size_average/reduce flags, argument errors and registration."""

from __future__ import annotations

import warnings

import dlfree as dl
import dlfree.nn as nn

import pytest
import torch

from support.nn_tables import LOSS_ROWS as ROWS
from support.nn_tables import W, build_loss
from support.torch_copy import assert_same_state, check_pair

IDS = [f"{row[0]}-{i}" for i, row in enumerate(ROWS)]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_loss_matches_torch(row):
    name, kwargs, inputs, *call = row
    ours, theirs = build_loss(name, kwargs)
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
    ours, _ = build_loss(name, kwargs)
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
