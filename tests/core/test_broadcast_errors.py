"""Shapes that do not broadcast are a ShapeError naming the op and every shape, in every
elementwise op and comparison (where torch refuses them too), and binary_cross_entropy
refuses inputs outside [0, 1], NaN included, as torch does."""

from __future__ import annotations

import inspect
import re

import dlfree as dl
import dlfree.functional as F
from dlfree.ops import comparison, elementwise

import pytest

torch = pytest.importorskip("torch")

# torch.equal answers False for tensors of different shapes instead of refusing them
NOT_REFUSED = {"equal"}
INTEGER_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor"}
SHAPES = [(2, 3), (4,), (3,)]


def _tensor_arity(fn) -> int:
    params = inspect.signature(fn).parameters.values()
    return sum(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty or
               p.name in ("input", "other") for p in params)


OPS = sorted((module.__name__.rsplit(".", 1)[1], name)
             for module in (elementwise, comparison) for name in module.__all__
             if name not in NOT_REFUSED and _tensor_arity(getattr(module, name)) >= 2)


def test_the_ops_checked_are_all_the_multi_operand_ones():
    names = {name for _, name in OPS}
    assert {"add", "mul", "pow", "where", "lerp", "addcmul", "eq", "logical_and", "isclose",
            "bitwise_xor", "atan2", "xlogy"} <= names
    assert len(names) >= 40


@pytest.mark.parametrize("module, name", OPS)
def test_shapes_that_do_not_broadcast_name_the_op_and_shapes(module, name):
    fn = getattr({"elementwise": elementwise, "comparison": comparison}[module], name)
    arity = _tensor_arity(fn)
    dtype, torch_dtype = (dl.int64, torch.int64) if name in INTEGER_ONLY else \
        (dl.float32, torch.float32)
    shapes = SHAPES[:arity]
    ours = [dl.ones(*s, dtype=dtype) for s in shapes]
    if name == "where":
        ours[0] = ours[0] > 0
    listed = " and ".join(re.escape(str(s)) for s in shapes)
    with pytest.raises(dl.ShapeError, match=rf"^{fn.__name__}: the shapes {listed} cannot be "
                                            r"broadcast together"):
        fn(*ours)
    theirs = [torch.ones(s, dtype=torch_dtype) for s in shapes]
    if name == "where":
        theirs[0] = theirs[0] > 0
    with pytest.raises(RuntimeError):
        getattr(torch, name)(*theirs)


@pytest.mark.parametrize("values", [[0.5, float("nan")], [1.5, 0.2], [-0.1, 0.3]],
                         ids=["nan", "above-one", "below-zero"])
def test_binary_cross_entropy_refuses_inputs_outside_zero_one(values):
    target = [1.0, 0.0]
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        torch.nn.functional.binary_cross_entropy(torch.tensor(values), torch.tensor(target))
    with pytest.raises(ValueError, match="all elements of input should be between 0 and 1 "
                                         rf"\(got {'NaN' if values[1] != values[1] else 'values'}"):
        F.binary_cross_entropy(dl.tensor(values), dl.tensor(target))
