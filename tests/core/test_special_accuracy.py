"""Accuracy of erf and exact GELU against math.erf / math.erfc on dense grids, per dtype.

float32 computes from one polynomial through tanh or exp (backends/special.py); float64
keeps Chebyshev series. The bounds are the ones the implementation states: float32 erf
within 2e-7 absolute and 3e-7 relative, float64 within 1e-15 relative. The reference is
math.erf / math.erfc in float64, whose own error (about 1e-16) is far below both.
"""

from __future__ import annotations

import math
import threading

import dlfree as dl
import dlfree.functional as F
from dlfree.backends import special

import numpy as np
import pytest
import torch

_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)
_SMALLEST_SUBNORMAL32 = 2.0 ** -149


def _erf_ref(x) -> np.ndarray:
    return _ERF(np.asarray(x, np.float64)).astype(np.float64)


def _gelu_ref(x) -> tuple[np.ndarray, np.ndarray]:
    """GELU and its derivative in float64: Phi from erfc keeps the left tail's digits."""
    x = np.atleast_1d(np.asarray(x, np.float64))
    cdf = 0.5 * _ERFC(-x / math.sqrt(2)).astype(np.float64)
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _left_tail_factor(x) -> np.ndarray:
    """max(1, x²) for x < 0, else 1: how much x * Phi(x) magnifies a relative error in x
    (the rounding of x / sqrt(2)) on the left tail."""
    x = np.asarray(x, np.float64)
    return np.where(x < 0, np.maximum(1, x * x), 1)


def _symmetric(positive) -> np.ndarray:
    return np.concatenate([positive, -positive])


def _float32_grid() -> np.ndarray:
    """Subnormals to 1e-3 (log spaced), [0, 6] every 2e-5, then out to 3e38, both signs."""
    return _symmetric(np.concatenate([
        np.geomspace(_SMALLEST_SUBNORMAL32, 1e-3, 10_000), np.linspace(0, 6, 300_001),
        np.geomspace(6, 3e38, 1_000)]).astype(np.float32))


def test_erf_float32_within_stated_bounds():
    x = _float32_grid()
    got = dl.erf(dl.tensor(x)).numpy()
    assert got.dtype == np.float32
    ref = _erf_ref(x)
    err = np.abs(got.astype(np.float64) - ref)
    normal = np.abs(ref) >= np.finfo(np.float32).tiny
    assert err.max() < 2e-7
    assert (err[normal] / np.abs(ref[normal])).max() < 3e-7
    # results below the smallest normal: within one step of the subnormal grid
    assert err[~normal].max() <= _SMALLEST_SUBNORMAL32


def test_erf_float32_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38], np.float32)
    got = dl.erf(dl.tensor(x)).numpy()
    np.testing.assert_array_equal(got, [0.0, -0.0, 1.0, -1.0, np.nan, 1.0, -1.0])
    assert np.signbit(got[1]) and not np.signbit(got[0])


def test_erf_float16_every_value_within_one_ulp():
    x = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    got = dl.erf(dl.tensor(x)).numpy()
    assert got.dtype == np.float16
    ref = _erf_ref(x).astype(np.float16)
    np.testing.assert_array_max_ulp(got, ref, maxulp=1)


def test_erf_and_erfc_float64_keep_1e_15():
    x = _symmetric(np.concatenate([np.geomspace(1e-300, 1e-3, 5_000), np.linspace(0, 6, 60_001),
                                   np.linspace(6, 26, 2_001)]))
    for op, ref in ((dl.erf, _erf_ref(x)), (dl.erfc, _ERFC(x).astype(np.float64))):
        got = op(dl.tensor(x)).numpy()
        normal = np.abs(ref) >= np.finfo(np.float64).tiny
        assert (np.abs(got - ref)[normal] / np.abs(ref[normal])).max() < 1e-15, op.__name__


def _gelu_grid() -> np.ndarray:
    return np.concatenate([np.linspace(-12, 12, 240_001), _symmetric(np.geomspace(1e-40, 1, 5_000)),
                           [0.0, 30.0, -30.0, 1e30, -1e30]]).astype(np.float32)


@pytest.mark.usefixtures("kernel_path")
def test_gelu_float32_within_stated_bounds():
    """x >= 0: within 3 ulp of the result; x < 0, where x * Phi(x) comes from a tail that
    float32 cannot resolve in relative terms: within 2e-7 absolute (torch's float32 GELU
    errs by up to ~1.3e-6 there)."""
    x = _gelu_grid()
    got = F.gelu(dl.tensor(x)).numpy().astype(np.float64)
    ref, _ = _gelu_ref(x)
    err = np.abs(got - ref)
    right = x >= 0
    ulp = np.spacing(np.abs(ref[right]).astype(np.float32)).astype(np.float64)
    assert (err[right] / ulp).max() <= 3
    assert err[~right].max() < 2e-7


@pytest.mark.usefixtures("kernel_path")
def test_gelu_float32_gradient_within_3e_7():
    x = _gelu_grid()
    t = dl.tensor(x, requires_grad=True)
    F.gelu(t).backward(dl.ones(x.shape))
    _, ref = _gelu_ref(x)
    assert np.abs(t.grad.numpy().astype(np.float64) - ref).max() < 3e-7


def test_gelu_float64_keeps_1e_15():
    """Relative error within 1e-15, times max(1, x²) on the left tail (see
    `_left_tail_factor`; torch's float64 GELU cancels to 0 there)."""
    x = np.concatenate([np.linspace(-37, 37, 100_001), _symmetric(np.geomspace(1e-300, 1, 2_000))])
    t = dl.tensor(x, requires_grad=True)
    out = F.gelu(t)
    out.backward(dl.ones(x.shape))
    ref, dref = _gelu_ref(x)
    normal = np.abs(ref) >= np.finfo(np.float64).tiny
    rel = np.abs(out.detach().numpy() - ref)[normal] / np.abs(ref[normal])
    assert (rel / _left_tail_factor(x[normal])).max() < 1e-15
    assert np.abs(t.grad.numpy() - dref).max() < 1e-15


@pytest.mark.usefixtures("kernel_path")
@pytest.mark.parametrize("dtype, rtol", [("float32", 3e-7), ("float64", 1e-15)])
def test_gelu_edge_values(dtype, rtol):
    """Signed zeros, tiny and large values, NaN (the tolerance as in the dense tests); far
    left the result underflows to -0.0."""
    x = np.array([0.0, -0.0, 1e-30, -1e-30, 20.0, -20.0, 100.0, -100.0, 1e30], dtype)
    ours = F.gelu(dl.tensor(x)).numpy()
    ref = _gelu_ref(x)[0].astype(dtype)
    assert np.all(np.abs(ours - ref) <= rtol * _left_tail_factor(x) * np.abs(ref))
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(ref))
    assert np.isnan(F.gelu(dl.tensor(np.array([np.nan], dtype))).item())
    if dtype == "float32":  # torch agrees where its 1 + erf does not cancel
        np.testing.assert_array_equal(ours, torch.nn.functional.gelu(torch.tensor(x)).numpy())


def _erf_gelu_and_grad(x: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    t = dl.tensor(x, requires_grad=True)
    out = F.gelu(t)
    out.backward(dl.tensor(g))
    return [dl.erf(dl.tensor(x)).numpy(), out.detach().numpy(), t.grad.numpy()]


@pytest.mark.usefixtures("kernel_path")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_blocks_cover_every_element(dtype, monkeypatch):
    """Blocks of 7 over 75 elements (the last one short), from a transposed input, give
    what one block gives, for erf, GELU and GELU's backward."""
    rs = np.random.default_rng(3)
    x = (rs.standard_normal((5, 15)) * 3).astype(dtype).T
    g = rs.standard_normal(x.shape).astype(dtype)
    whole = _erf_gelu_and_grad(x, g)
    monkeypatch.setattr(special, "_BLOCK", 7)
    for blocked, expected in zip(_erf_gelu_and_grad(x, g), whole):
        assert blocked.shape == x.shape and blocked.dtype == x.dtype
        np.testing.assert_array_max_ulp(blocked, expected, maxulp=1)


@pytest.mark.usefixtures("kernel_path")
def test_threads_share_the_blocks_without_changing_a_bit(monkeypatch):
    """Blocks of 16 over 1000 elements: four threads take runs of them (two blocks at the
    least), for erf, GELU and GELU's backward, and agree bit for bit with one thread."""
    rs = np.random.default_rng(4)
    x = (rs.standard_normal((40, 25)) * 3).astype("float32")
    g = rs.standard_normal(x.shape).astype("float32")
    monkeypatch.setattr(special, "_BLOCK", 16)
    workers = set()
    original = special.parallel_for

    def spy(count, fn, min_chunk=1):
        def run(lo, hi):
            workers.add(threading.get_ident())
            fn(lo, hi)
        original(count, run, min_chunk)

    monkeypatch.setattr(special, "parallel_for", spy)
    before = dl.get_num_threads()
    try:
        dl.set_num_threads(1)
        serial = _erf_gelu_and_grad(x, g)
        dl.set_num_threads(4)
        for threaded, expected in zip(_erf_gelu_and_grad(x, g), serial, strict=True):
            np.testing.assert_array_equal(threaded, expected)
        assert len(workers) >= 2  # the pool may hand two runs to one of its threads
    finally:
        dl.set_num_threads(before)


@pytest.mark.usefixtures("kernel_path")
def test_gelu_on_empty_and_scalar_tensors():
    assert F.gelu(dl.zeros(0, 3)).shape == (0, 3)
    x = dl.tensor(1.5, requires_grad=True)
    out = F.gelu(x)
    out.backward()
    assert out.shape == () and x.grad.shape == ()
    assert abs(out.item() - _gelu_ref(1.5)[0]) < 3e-7
