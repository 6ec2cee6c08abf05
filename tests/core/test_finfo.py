"""dl.finfo and dl.iinfo: the machine limits torch.finfo and torch.iinfo give."""

from __future__ import annotations

import dlfree as dl

import pytest
import torch


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "bfloat16", "complex64"])
def test_finfo_matches_torch(name):
    ours, theirs = dl.finfo(getattr(dl, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal"):
        assert float(getattr(ours, field)) == float(getattr(theirs, field)), field
    # 10^-digits, held in the dtype itself (torch's is a Python float): float16's 0.001 is
    # 0.0010004 once rounded
    assert float(ours.resolution) == pytest.approx(theirs.resolution, rel=1e-3)


def test_finfo_without_a_dtype_is_the_default_dtype_s():
    assert float(dl.finfo().eps) == float(torch.finfo(torch.float32).eps)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    ours, theirs = dl.iinfo(getattr(dl, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, int(ours.min), int(ours.max)) == (theirs.bits, theirs.min, theirs.max)


def test_the_wrong_kind_of_dtype_names_the_other_function():
    with pytest.raises(dl.DTypeError, match="not a floating dtype; use iinfo"):
        dl.finfo(dl.int32)
    with pytest.raises(dl.DTypeError, match="not an integer dtype; use finfo"):
        dl.iinfo(dl.float32)
