"""Parity cases for reductions, scans and softmax (see parity.py), plus their error paths."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

from support.parity import Case, run_family
from support.specs import Bool, Fixed, Float

S = (3, 4)
S3 = (2, 3, 4)
POS = Float(S, 0.5, 1.5)
DISTINCT = Float(S3, distinct=True)
# distinct values in [-1, 2]: no two share an absolute value, so max |x| never ties
SPREAD = Float(S3, -1.0, 2.0, distinct=True)
# linspace(-2, 2, n) with n odd holds an exact 0: products and scans meet a zero
WITH_ZERO = Float((3, 5), -2.0, 2.0, distinct=True)
VEC_ZERO = Float((5,), -2.0, 2.0, distinct=True)
# -2, -1, 0, 1, 2 in some order: |x| has exact ties, where the gradient is split (central
# differences at a tie agree with the split)
TIES = VEC_ZERO
INTS = Fixed([[1, -2, 3], [4, 5, -6]], "int64")

CASES = [
    # sum / mean
    Case("sum_all", lambda m, a: a.sum(), [S], gradgrad=True),
    Case("sum_dim", lambda m, a: m.sum(a, 1), [S], gradgrad=True),
    Case("sum_dims_keepdim", lambda m, a: a.sum((0, 2), keepdim=True), [S3], gradgrad=True),
    Case("sum_neg_dim", lambda m, a: a.sum(dim=-1), [S3], gradgrad=True),
    Case("sum_0d", lambda m, a: a.sum(), [()], gradgrad=True),
    Case("sum_empty", lambda m, a: a.sum(0), [(0, 3)], gradcheck=False, gradgrad=True),
    Case("sum_dtype", lambda m, a: a.sum(1, dtype=m.float64), [S], gradgrad=True),
    Case("sum_int", lambda m, a: a.sum(1), [INTS], grad=False),
    Case("sum_bool", lambda m, a: a.sum(), [Bool(S)], grad=False),
    Case("mean_all", lambda m, a: a.mean(), [S], gradgrad=True),
    Case("mean_dims_keepdim", lambda m, a: m.mean(a, (0, -1), keepdim=True), [S3], gradgrad=True),
    Case("mean_empty", lambda m, a: a.mean(0), [(0, 3)], gradcheck=False, gradgrad=True),
    # var / std
    Case("var_all", lambda m, a: a.var(), [S], gradgrad=True),
    Case("var_dim_biased", lambda m, a: m.var(a, 1, unbiased=False), [S], gradgrad=True),
    Case("var_correction", lambda m, a: m.var(a, (0, 2), correction=0, keepdim=True), [S3],
         gradgrad=True),
    Case("std_dim", lambda m, a: a.std(0), [S], gradgrad=True),
    Case("std_correction", lambda m, a: a.std(dim=-1, correction=2, keepdim=True), [S3],
         gradgrad=True),
    Case("var_mean", lambda m, a: m.var_mean(a, 1), [S], gradgrad=True),
    Case("std_mean", lambda m, a: m.std_mean(a, (0, 1), keepdim=True), [S3], gradgrad=True),
    # prod, including zeros (one zero per slice, then several)
    Case("prod_all", lambda m, a: a.prod(), [POS], gradgrad=True),
    Case("prod_dim_keepdim", lambda m, a: a.prod(1, keepdim=True), [POS], gradgrad=True),
    Case("prod_one_zero", lambda m, a: a.prod(1), [WITH_ZERO], gradgrad=True),
    Case("prod_all_one_zero", lambda m, a: a.prod(), [VEC_ZERO], gradgrad=True),
    Case("prod_two_zeros", lambda m, a: a.expand(2, 5).prod(0), [VEC_ZERO], gradgrad=True),
    Case("prod_all_two_zeros", lambda m, a: a.expand(2, 5).prod(), [VEC_ZERO], gradgrad=True),
    Case("prod_int", lambda m, a: a.prod(0), [INTS], grad=False),
    Case("prod_0d", lambda m, a: a.prod(0), [()], gradgrad=True),
    # cumsum / cumprod
    Case("cumsum", lambda m, a: a.cumsum(1), [S], gradgrad=True),
    Case("cumsum_neg_dim", lambda m, a: m.cumsum(a, -3), [S3], gradgrad=True),
    Case("cumsum_int", lambda m, a: a.cumsum(0), [INTS], grad=False),
    Case("cumsum_0d", lambda m, a: a.cumsum(0), [()], gradgrad=True),
    Case("cumprod", lambda m, a: a.cumprod(1), [POS], gradgrad=True),
    Case("cumprod_one_zero", lambda m, a: a.cumprod(1), [WITH_ZERO], gradgrad=True),
    Case("cumprod_dim0_zero", lambda m, a: a.cumprod(0), [WITH_ZERO], gradgrad=True),
    Case("cumprod_zeros", lambda m, a: a.expand(3, 5).reshape(15).cumprod(0), [VEC_ZERO],
         gradgrad=True),
    # max / min / amax / amin / median / argmax
    Case("max_all", lambda m, a: a.max(), [DISTINCT], gradgrad=True),
    Case("max_dim", lambda m, a: a.max(1), [DISTINCT], gradgrad=True),
    Case("max_dim_keepdim", lambda m, a: m.max(a, -1, keepdim=True), [DISTINCT], gradgrad=True),
    Case("min_all", lambda m, a: m.min(a), [DISTINCT], gradgrad=True),
    Case("min_dim", lambda m, a: a.min(0), [DISTINCT], gradgrad=True),
    Case("max_0d_dim", lambda m, a: a.max(0), [()], gradgrad=True),
    Case("max_binary", lambda m, a, b: m.max(a, b), [Float(S, distinct=True), (4,)], gradgrad=True),
    Case("max_ties", lambda m, a: a.abs().max(), [TIES]),
    Case("amax_dims", lambda m, a: m.amax(a, (0, 2), keepdim=True), [DISTINCT], gradgrad=True),
    Case("amax_all", lambda m, a: a.amax(), [DISTINCT], gradgrad=True),
    Case("amin_neg_dim", lambda m, a: a.amin(-1), [DISTINCT], gradgrad=True),
    Case("amax_ties", lambda m, a: a.abs().reshape(1, 5).amax(), [TIES]),
    Case("amin_ties", lambda m, a: m.amin(-a.abs(), 0), [TIES]),
    Case("min_ties", lambda m, a: (a * a).min(), [Float((4,), -1.5, 1.5, distinct=True)],
         gradgrad=True),
    Case("median_all", lambda m, a: a.median(), [DISTINCT], gradgrad=True),
    Case("median_dim", lambda m, a: a.median(1), [Float((3, 5), distinct=True)], gradgrad=True),
    Case("median_dim_keepdim", lambda m, a: m.median(a, 0, keepdim=True), [DISTINCT],
         gradgrad=True),
    Case("argmax_all", lambda m, a: a.argmax(), [DISTINCT], grad=False),
    Case("argmax_dim_keepdim", lambda m, a: m.argmax(a, 1, keepdim=True), [DISTINCT],
         grad=False),
    Case("argmin_dim", lambda m, a: a.argmin(-1), [DISTINCT], grad=False),
    # logsumexp
    Case("logsumexp", lambda m, a: a.logsumexp(1), [S], gradgrad=True),
    Case("logsumexp_dims_keepdim", lambda m, a: m.logsumexp(a, (0, 2), keepdim=True), [S3],
         gradgrad=True),
    Case("logsumexp_large", lambda m, a: a.logsumexp(-1), [Float(S, 80.0, 120.0)], gradgrad=True),
    Case("logsumexp_empty", lambda m, a: a.logsumexp(0), [(0, 3)], gradcheck=False, gradgrad=True),
    # norm (Tensor.norm / torch.norm)
    Case("norm_fro", lambda m, a: a.norm(), [S], gradgrad=True),
    Case("norm_2_dim", lambda m, a: m.norm(a, 2, 1), [S3], gradgrad=True),
    Case("norm_1_keepdim", lambda m, a: a.norm(p=1, dim=(0, 2), keepdim=True), [S3]),
    Case("norm_inf", lambda m, a: a.norm(p=float("inf"), dim=1), [SPREAD]),
    Case("norm_neg_inf", lambda m, a: a.norm(p=-float("inf")), [SPREAD]),
    Case("norm_3", lambda m, a: a.norm(p=3, dim=-1), [S3], gradgrad=True),
    Case("norm_1.5", lambda m, a: a.norm(p=1.5, dim=0), [S], gradgrad=True),
    Case("norm_0.5", lambda m, a: a.norm(p=0.5), [POS], gradgrad=True),
    Case("norm_0", lambda m, a: a.norm(p=0, dim=1), [S], gradgrad=True),
    Case("norm_empty", lambda m, a: a.norm(), [(0, 3)], gradcheck=False, gradgrad=True),
    # all / any
    Case("all", lambda m, a: a.all(), [Bool(S)], grad=False),
    Case("all_dims", lambda m, a: m.all(a, (0, 2), keepdim=True), [Bool(S3)], grad=False),
    Case("any_dim", lambda m, a: a.any(1), [Bool(S)], grad=False),
    Case("any_float", lambda m, a: (a > 1).any(-1), [S3], grad=False),
    Case("all_empty", lambda m, a: a.all(), [Bool((0, 2))], grad=False),
    # softmax / log_softmax
    Case("softmax", lambda m, a: m.softmax(a, 1), [S], gradgrad=True),
    Case("softmax_dim0", lambda m, a: a.softmax(0), [S3], gradgrad=True),
    Case("softmax_dtype", lambda m, a: m.softmax(a, -1, dtype=m.float64), [S], gradgrad=True),
    Case("softmax_large", lambda m, a: a.softmax(-1), [Float(S, 80.0, 120.0)], gradgrad=True),
    Case("softmax_empty", lambda m, a: a.softmax(1), [(0, 3)], gradgrad=True),
    Case("log_softmax", lambda m, a: m.log_softmax(a, -1), [S3], gradgrad=True),
    Case("log_softmax_dtype", lambda m, a: a.log_softmax(1, dtype=m.float64), [S],
         gradgrad=True),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_max_with_dim_is_a_named_pair():
    out = dl.tensor([[1.0, 5.0, 2.0]]).max(1)
    assert type(out).__name__ == "max"
    assert out.values.tolist() == [5.0] and out.indices.tolist() == [1]
    assert out.indices.dtype == dl.int64


@pytest.mark.parametrize("op", ["max", "min", "amax", "argmax", "median"])
def test_reducing_an_empty_dim_is_a_shape_error(op):
    with pytest.raises(dl.ShapeError, match=rf"{op}: cannot reduce dim 0 of size 0.*\(0, 3\)"):
        getattr(dl.zeros(0, 3), op)(0)


def test_bad_dims_are_shape_errors():
    x = dl.zeros(2, 3)
    with pytest.raises(dl.ShapeError, match=r"sum: dim 2 is out of range.*valid: \[-2, 1\]"):
        x.sum(2)
    with pytest.raises(dl.ShapeError, match=r"mean: dim \(1, -1\) names a dimension twice"):
        x.mean((1, -1))
    with pytest.raises(dl.ShapeError, match=r"vector_norm: cannot take the inf norm"):
        dl.zeros(0).norm(p=float("inf"))


def test_integer_inputs_are_dtype_errors_where_torch_refuses():
    with pytest.raises(dl.DTypeError, match="mean: could not infer output dtype"):
        dl.tensor([1, 2]).mean()
    with pytest.raises(dl.DTypeError,
                       match="var: not supported for int64 tensors; valid: floating-point"):
        dl.tensor([1, 2]).var()


def test_var_without_degrees_of_freedom_warns_like_torch():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        out = dl.tensor([1.0]).var()
    assert np.isnan(out.item())


def test_softmax_without_dim_warns_like_torch():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        dl.softmax(dl.zeros(2, 3))


def test_cumprod_backward_with_zeros_has_no_nan():
    x = dl.tensor([2.0, 0.0, 3.0, 0.0, 4.0], requires_grad=True)
    x.cumprod(0).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0 + 6.0 + 0.0, 0.0, 0.0, 0.0]
