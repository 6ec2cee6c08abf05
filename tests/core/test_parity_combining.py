"""Parity cases for ops/combining.py (the stack and split families, rot90, meshgrid,
combinations, block_diag, repeat_interleave, diff, unfold, as_strided, ...) against torch,
and the in-place shape ops (squeeze_, unsqueeze_, t_, transpose_)."""

from __future__ import annotations

import dlfree as dl

import pytest
import torch

from support.parity import Case, cubed, run_family
from support.specs import Bool, Fixed, Int

S = (4, 6)
S3 = (2, 3, 4)

CASES = [
    Case("tensor_split_sections", lambda m, a: m.tensor_split(a, 4, dim=1), [S],
         gradgrad=True),
    Case("tensor_split_indices", lambda m, a: a.tensor_split([1, 4, 9], 1), [S]),
    Case("tensor_split_unordered", lambda m, a: a.tensor_split((3, 1, -2)), [S]),
    Case("hsplit", lambda m, a: m.hsplit(a, 3), [S]),
    Case("hsplit_1d", lambda m, a: a.hsplit([2]), [(5,)]),
    Case("vsplit", lambda m, a: m.vsplit(a, [1, 3]), [S]),
    Case("dsplit", lambda m, a: m.dsplit(a, 2), [S3]),
    Case("hstack", lambda m, a, b: m.hstack([a, b]), [(2, 3), (2, 1)], gradgrad=True),
    Case("hstack_1d", lambda m, a, b: m.hstack((a, b)), [(3,), (2,)]),
    Case("vstack", lambda m, a, b: m.vstack([a, b]), [(3,), (2, 3)]),
    Case("row_stack", lambda m, a, b: m.row_stack([a, b]), [(3,), (3,)]),
    Case("dstack", lambda m, a, b: m.dstack([a, b]), [(3,), (1, 3)]),
    Case("column_stack", lambda m, a, b, c: m.column_stack([a, b, c]), [(3,), (3, 2), (3,)]),
    Case("fliplr", lambda m, a: m.fliplr(a), [S3]),
    Case("flipud", lambda m, a: a.flipud(), [S]),
    Case("rot90", lambda m, a: m.rot90(a), [S]),
    Case("rot90_k2_dims", lambda m, a: a.rot90(2, [1, 2]), [S3]),
    Case("rot90_k3", lambda m, a: a.rot90(-1, (0, 2)), [S3]),
    Case("meshgrid_ij", lambda m, a, b: m.meshgrid(a, b, indexing="ij"), [(3,), (4,)]),
    Case("meshgrid_xy", lambda m, a, b, c: m.meshgrid([a, b, c], indexing="xy"),
         [(3,), (4,), (2,)]),
    Case("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b), [(3,), (2,)],
         gradgrad=True),
    Case("combinations", lambda m, a: m.combinations(a), [(4,)], gradgrad=True),
    Case("combinations_r3_replacement", lambda m, a: m.combinations(a, 3, True), [(3,)]),
    Case("combinations_too_long", lambda m, a: m.combinations(a, 4), [(3,)], grad=False),
    Case("block_diag", lambda m, a, b, c: m.block_diag(a, b, c), [(2, 3), (), (4,)],
         gradgrad=True),
    Case("repeat_interleave", lambda m, a: m.repeat_interleave(a, 2), [S], gradgrad=True),
    Case("repeat_interleave_dim_counts", lambda m, a, r: a.repeat_interleave(r, dim=1),
         [S, Int((6,), 0, 3)], gradgrad=True),
    Case("repeat_interleave_counts_only", lambda m, r: m.repeat_interleave(r),
         [Fixed([2, 0, 3, 1], "int64")], grad=False),
    Case("diff", lambda m, a: m.diff(a), [S], gradgrad=True),
    Case("diff_n2_dim0_prepend", lambda m, a, p, q: a.diff(2, 0, prepend=p, append=q),
         [S, (1, 6), (2, 6)], gradgrad=True),
    Case("diff_bool", lambda m, a: a.diff(), [Bool((3, 5))], grad=False),
    Case("ravel", lambda m, a: m.ravel(a.mT), [S], gradgrad=True),
    Case("sum_to_size", lambda m, a: a.sum_to_size(1, 6), [S], gradgrad=True),
    Case("sum_to_size_tuple", lambda m, a: a.sum_to_size((3, 1)), [S3]),
    Case("unfold", lambda m, a: a.unfold(1, 3, 2), [S], gradgrad=True),
    Case("unfold_dim0_overlap", lambda m, a: cubed(lambda m, t: t.unfold(0, 2, 1))(m, a),
         [S3], gradgrad=True),
    Case("as_strided", lambda m, a: m.as_strided(a, (3, 3), (2, 1), 1), [(4, 3)],
         gradgrad=True),
    Case("as_strided_method_overlap", lambda m, a: a.as_strided((4, 2), (1, 1)), [(6,)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


@pytest.mark.parametrize("name, args", [("squeeze_", (1,)), ("unsqueeze_", (0,)),
                                        ("t_", ()), ("transpose_", (0, 2)),
                                        ("swapaxes_", (1, 2))])
def test_in_place_shape_ops_match_torch_and_keep_the_graph(name, args):
    shape = (3, 1, 2) if name != "t_" else (3, 2)
    values = torch.randn(shape, dtype=torch.float64)
    ref_leaf = values.clone().requires_grad_()
    ref = ref_leaf * 2
    getattr(ref, name)(*args)
    ours_leaf = dl.tensor(values.numpy(), requires_grad=True)
    ours = ours_leaf * 2
    assert getattr(ours, name)(*args) is ours
    assert tuple(ours.shape) == tuple(ref.shape)
    assert ours.tolist() == ref.tolist()
    weights = torch.randn(tuple(ref.shape), dtype=torch.float64)
    (ref * weights).sum().backward()
    (ours * dl.tensor(weights.numpy())).sum().backward()
    assert ours_leaf.grad.tolist() == ref_leaf.grad.tolist()


def test_in_place_shape_op_on_a_leaf_that_requires_grad_is_refused():
    with pytest.raises(dl.AutogradError, match="t_: a leaf tensor that requires grad"):
        dl.ones(2, 3, requires_grad=True).t_()


def test_in_place_shape_op_invalidates_a_graph_that_saved_the_tensor():
    leaf = dl.ones(2, 3, requires_grad=True)
    x = leaf * 1
    y = x * x
    x.t_()
    with pytest.raises(dl.AutogradError, match="modified by an in-place operation"):
        y.sum().backward()


@pytest.mark.parametrize("call, message", [
    (lambda x: dl.vsplit(x[0], 2), r"vsplit: needs a tensor with at least 2 dimension"),
    (lambda x: dl.hsplit(x, 4), r"hsplit: dimension 1 of size 6 cannot be split into 4 equal"),
    (lambda x: x.rot90(1, (0, 0)), r"rot90: dims \(0, 0\) must be two different"),
    (lambda x: x.sum_to_size(4, 1, 1), r"sum_to_size: size \(4, 1, 1\) is not expandable"),
    (lambda x: x.unfold(1, 7, 1), r"unfold: size 7 and step 1 do not fit dimension 1"),
    (lambda x: x.as_strided((5,), (6,)), r"as_strided: .* reach outside the 24 elements"),
    (lambda x: dl.repeat_interleave(x, dl.tensor([1, 2]), dim=1),
     r"repeat_interleave: repeats has 2 counts but dimension 1 has size 6"),
])
def test_bad_shapes_are_shape_errors(call, message):
    with pytest.raises(dl.ShapeError, match=message):
        call(dl.zeros(4, 6))
