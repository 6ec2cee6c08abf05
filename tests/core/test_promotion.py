"""Type promotion: dl.free gives the dtype torch gives, for every pair of the nine dtypes.

Covered: dimensioned and 0-d tensors in all four combinations, Python bool/int/float
scalars on either side, the ops + * / ** where maximum, and the default float64.
"""

from __future__ import annotations

import itertools

import dlfree as dl
from dlfree import dtypes

import numpy as np
import pytest
import torch

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = [True, 3, 2.5]

OPS = {
    "add": lambda m, a, b: a + b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a ** b,
    "where": lambda m, a, b: m.where(m.tensor([True, False]), a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
}


def _values(name: str, dims: int) -> np.ndarray:
    values = {"bool": [True, False], "float16": [1.5, 2.0], "float32": [1.5, 2.0],
              "float64": [1.5, 2.0]}.get(name, [1, 2])
    return np.array(values if dims else values[0], dtype=name)


def _pair(a, b):
    """The operands for both libraries: arrays become tensors, Python scalars stay."""
    def lib(m):
        return [m.tensor(x) if isinstance(x, np.ndarray) else x for x in (a, b)]

    return lib(dl), lib(torch)


def _check(op: str, a, b) -> None:
    ours_in, ref_in = _pair(a, b)
    try:
        ref = OPS[op](torch, *ref_in)
    except (RuntimeError, TypeError):  # torch refuses it (e.g. bool ** bool): so must we
        with pytest.raises((dl.DLFreeError, TypeError)):
            OPS[op](dl, *ours_in)
        return
    ours = OPS[op](dl, *ours_in)
    what = f"{op}({a!r}, {b!r})"
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], \
        f"{what}: dtype {ours.dtype}, torch gives {ref.dtype}"
    assert tuple(ours.shape) == tuple(ref.shape), what
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               ref.numpy().astype(np.float64), rtol=1e-3, err_msg=what)


@pytest.fixture(params=["float32", "float64"])
def default_dtype(request):
    """Run under each default float dtype (restored afterwards, in both libraries)."""
    dl_before, torch_before = dl.get_default_dtype(), torch.get_default_dtype()
    dl.set_default_dtype(getattr(dl, request.param))
    torch.set_default_dtype(getattr(torch, request.param))
    try:
        yield request.param
    finally:
        dl.set_default_dtype(dl_before)
        torch.set_default_dtype(torch_before)


@pytest.mark.parametrize("left, right", list(itertools.product(NAMES, NAMES)))
def test_tensor_pairs(left, right, default_dtype):
    """Both dimensioned, and each side (or both) 0-d."""
    for left_dims, right_dims in itertools.product((1, 0), (1, 0)):
        a, b = _values(left, left_dims), _values(right, right_dims)
        assert dtypes.result_type(*_pair(a, b)[0]) == \
            np.dtype(str(torch.result_type(*_pair(a, b)[1])).split(".")[-1])
        for op in OPS:
            _check(op, a, b)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scalar", SCALARS, ids=["bool", "int", "float"])
def test_python_scalars(name, scalar, default_dtype):
    """A Python scalar on the left or right of a dimensioned or 0-d tensor."""
    for dims in (1, 0):
        t = _values(name, dims)
        for op in ("add", "mul", "div", "pow", "where"):
            if not (op == "pow" and name == "bool" and scalar is True):
                _check(op, t, scalar)  # torch has no bool pow; only its x ** 1 shortcut works
            _check(op, scalar, t)


@pytest.mark.parametrize("left, right", list(itertools.product(SCALARS, SCALARS)))
def test_where_of_two_scalars(left, right, default_dtype):
    _check("where", left, right)


def test_default_dtype_is_restored():
    assert dl.get_default_dtype() is dl.float32
    assert (dl.tensor([1, 2]) / 2).dtype is dl.float32
