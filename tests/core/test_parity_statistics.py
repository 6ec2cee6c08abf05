"""Parity cases for ops/statistics.py (cummax, cummin, logcumsumexp, aminmax, nan-reductions,
quantile, cov, corrcoef) against torch, with gradcheck."""

from __future__ import annotations

import dlfree as dl

import pytest

from support.parity import Case, run_family
from support.specs import Fixed, Float, Int

S = (3, 5)
DISTINCT = Float(S, distinct=True)
DISTINCT3 = Float((2, 3, 4), distinct=True)
NAN = float("nan")
WITH_NAN = Fixed([[1.0, NAN, -2.0, 0.5, 3.0], [NAN, NAN, NAN, NAN, NAN],
                  [4.0, 3.0, NAN, -1.0, 2.0]])
TIES = Fixed([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, -1.0, 0.0, -1.0, 5.0]])
# q drawn in [0, 1) and cast with the input (torch wants q in the input's dtype); the ends
# 0 and 1 appear in QEND
Q = Float((5,), 0.0, 1.0, grad=False)
QEND = Fixed([0.0, 0.25, 0.5, 0.9, 1.0])

CASES = [
    Case("cummax", lambda m, a: m.cummax(a, 1), [DISTINCT], gradgrad=True),
    Case("cummax_dim0", lambda m, a: a.cummax(0), [DISTINCT3], gradgrad=True),
    Case("cummax_ties", lambda m, a: a.cummax(1), [TIES], grad=False),
    Case("cummax_nan", lambda m, a: a.cummax(1), [WITH_NAN], grad=False),
    Case("cummin", lambda m, a: m.cummin(a, -1), [DISTINCT], gradgrad=True),
    Case("cummin_ties_int", lambda m, a: a.cummin(1), [Int(S, 0, 3)], grad=False),
    Case("logcumsumexp", lambda m, a: m.logcumsumexp(a, 1), [S]),
    Case("logcumsumexp_wide", lambda m, a: (a * 50).logcumsumexp(0), [(4, 3)]),
    Case("aminmax", lambda m, a: m.aminmax(a), [DISTINCT]),
    Case("aminmax_dim", lambda m, a: a.aminmax(dim=1, keepdim=True), [DISTINCT]),
    Case("count_nonzero", lambda m, a: m.count_nonzero(a, 1), [Int(S, 0, 2)], grad=False),
    Case("count_nonzero_all", lambda m, a: a.count_nonzero(), [Int(S, 0, 2)], grad=False),
    Case("nansum", lambda m, a: m.nansum(a), [WITH_NAN], grad=False),
    Case("nansum_dim_grad", lambda m, a: a.nansum(1), [S], gradgrad=True),
    Case("nanmean", lambda m, a: m.nanmean(a, 1), [WITH_NAN], grad=False),
    Case("nanmean_grad", lambda m, a: a.nanmean(0, keepdim=True), [S], gradgrad=True),
    Case("nanmedian", lambda m, a: m.nanmedian(a), [WITH_NAN], grad=False),
    Case("nanmedian_dim", lambda m, a: a.nanmedian(1), [Fixed([[1.0, NAN, -2.0, 0.5, 3.0],
                                                               [4.0, 3.0, NAN, -1.0, 2.0]])],
         grad=False),
    Case("nanmedian_grad", lambda m, a: a.nanmedian(0, keepdim=True), [DISTINCT],
         gradgrad=True),
    Case("quantile", lambda m, a: m.quantile(a, 0.3), [DISTINCT], gradgrad=True),
    Case("quantile_dim_tensor_q", lambda m, a, q: m.quantile(a, q, dim=1), [DISTINCT, Q],
         gradgrad=True),
    Case("quantile_ends", lambda m, a, q: m.quantile(a, q.to(a.dtype), dim=1),
         [DISTINCT, QEND]),
    Case("quantile_keepdim", lambda m, a, q: a.quantile(q, dim=0, keepdim=True),
         [DISTINCT3, Q]),
    Case("quantile_all_keepdim", lambda m, a, q: a.quantile(q, keepdim=True), [DISTINCT3, Q]),
    Case("quantile_lower", lambda m, a, q: a.quantile(q, 1, interpolation="lower"),
         [DISTINCT, Q]),
    Case("quantile_higher", lambda m, a, q: a.quantile(q, 1, interpolation="higher"),
         [DISTINCT, Q]),
    Case("quantile_midpoint", lambda m, a, q: a.quantile(q, 1, interpolation="midpoint"),
         [DISTINCT, Q]),
    Case("quantile_nearest", lambda m, a, q: a.quantile(q, 1, interpolation="nearest"),
         [Float((3, 9), distinct=True), Float((4,), 0.0, 1.0, grad=False)]),
    Case("quantile_nan", lambda m, a: a.quantile(0.5, dim=1), [WITH_NAN], grad=False),
    Case("nanquantile", lambda m, a, q: m.nanquantile(a, q.to(a.dtype), dim=1), [WITH_NAN, QEND],
         grad=False),
    Case("nanquantile_all", lambda m, a: a.nanquantile(0.4), [WITH_NAN], grad=False),
    Case("cov", lambda m, a: m.cov(a), [(3, 6)], gradgrad=True),
    Case("cov_1d_correction", lambda m, a: a.cov(correction=0), [(6,)], gradgrad=True),
    Case("cov_weights", lambda m, a, f, w: m.cov(a, fweights=f, aweights=w),
         [(3, 6), Int((6,), 1, 4), Float((6,), 0.5, 2.0, grad=False)], gradgrad=True),
    Case("corrcoef", lambda m, a: m.corrcoef(a), [(3, 6)], gradgrad=True),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_quantile_refuses_q_outside_the_unit_interval():
    with pytest.raises(dl.DTypeError, match="quantile: q of dtype float64 must have the "
                                            "input's dtype float32"):
        dl.quantile(dl.ones(3), dl.tensor([0.5], dtype=dl.float64))
    with pytest.raises(ValueError, match=r"quantile: q must lie in \[0, 1\]"):
        dl.quantile(dl.ones(3), 1.5)
    with pytest.raises(ValueError, match="interpolation must be one of"):
        dl.quantile(dl.ones(3), 0.5, interpolation="cubic")


def test_logcumsumexp_does_not_overflow():
    x = dl.tensor([1000.0, 1000.0, -1000.0])
    assert x.logcumsumexp(0).tolist() == pytest.approx([1000.0, 1000.6931472, 1000.6931472])
