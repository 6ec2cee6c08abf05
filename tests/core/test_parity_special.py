"""Special functions (lgamma, digamma, polygamma, mvlgamma, i0, sinc, logit) against torch:
parity rows with gradcheck, and accuracy on dense grids in float64.

Accuracy stated by backends/gamma_bessel.py and checked here in float64 against torch (whose
own error is about 1e-16 there): lgamma within 1e-13 absolute + 1e-13 relative (also against
math.lgamma), digamma within 1e-12 relative, i0 within 1e-14 relative over [-30, 700]; on both
sides of zero for lgamma and digamma (the reflection formulas). polygamma(1..3) is within
1e-12 relative of SciPy's (torch's trigamma itself is good to about 1e-9 only).
"""

from __future__ import annotations

import math

import dlfree as dl

import numpy as np
import pytest
import scipy.special
import torch

from support.parity import Case, run_family
from support.specs import Fixed, Float

POS = Float((3, 4), 0.3, 6.0)
NEG = Float((3, 4), -3.9, -0.1)  # may land near a pole only with probability ~0
UNIT = Float((3, 4), 0.05, 0.95)
WIDE = Float((3, 4), -4.0, 4.0)

CASES = [
    Case("lgamma", lambda m, a: m.lgamma(a), [POS], gradgrad=True),
    Case("lgamma_negative", lambda m, a: a.lgamma(), [Float((3, 4), -2.9, -2.1)],
         gradgrad=True),
    Case("lgamma_int", lambda m, a: a.lgamma(), [Fixed([1, 2, 5, 10], "int64")], grad=False),
    Case("digamma", lambda m, a: m.digamma(a), [POS], gradgrad=True),
    Case("digamma_negative", lambda m, a: a.digamma(), [Float((3, 4), -1.8, -1.2)],
         gradgrad=True),
    Case("polygamma_1", lambda m, a: m.polygamma(1, a), [POS], gradgrad=True),
    Case("polygamma_2_method", lambda m, a: a.polygamma(2), [POS], gradgrad=True),
    Case("polygamma_0", lambda m, a: m.polygamma(0, a), [POS]),
    Case("mvlgamma", lambda m, a: m.mvlgamma(a, 3), [Float((3, 4), 1.1, 5.0)], gradgrad=True),
    Case("i0", lambda m, a: m.i0(a), [WIDE], gradgrad=True),
    Case("i0_large", lambda m, a: a.i0(), [Float((5,), 16.0, 40.0)], gradgrad=True),
    Case("sinc", lambda m, a: m.sinc(a), [WIDE], gradgrad=True),
    Case("sinc_zero", lambda m, a: a.sinc(), [Fixed([0.0, 1.0, -0.5])], grad=False),
    Case("logit", lambda m, a: m.logit(a), [UNIT], gradgrad=True),
    Case("logit_eps", lambda m, a: a.logit(eps=0.2), [UNIT], gradgrad=True),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def _both(fn_dl, fn_torch, x):
    ours = fn_dl(dl.tensor(x)).numpy()
    ref = fn_torch(torch.tensor(x)).numpy()
    return ours, ref


def test_lgamma_float64_accuracy_both_sides_of_zero():
    x = np.concatenate([np.linspace(1e-6, 30, 20001), -np.linspace(0.01, 20.99, 5000) + 1e-3,
                        np.geomspace(30, 1e300, 200)])
    ours, ref = _both(dl.lgamma, torch.lgamma, x)
    np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=1e-13)
    exact = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(ours, exact, rtol=1e-13, atol=1e-13)


def test_digamma_and_polygamma_float64_accuracy():
    x = np.concatenate([np.linspace(0.01, 40, 8001), np.geomspace(40, 1e12, 100)])
    ours, ref = _both(dl.digamma, torch.digamma, x)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-13)
    neg = -np.linspace(0.05, 9.95, 2000) + 3e-4
    ours, ref = _both(dl.digamma, torch.digamma, neg)
    np.testing.assert_allclose(ours, ref, rtol=1e-11, atol=1e-14)
    # torch's trigamma is good to ~1e-9 only; SciPy's polygamma (Cephes' zeta) is the oracle
    for n in (1, 2, 3):
        ours = dl.polygamma(n, dl.tensor(x)).numpy()
        np.testing.assert_allclose(ours, scipy.special.polygamma(n, x), rtol=1e-12)


def test_i0_float64_accuracy():
    x = np.concatenate([np.linspace(-30, 30, 12001), np.linspace(30, 700, 500)])
    ours, ref = _both(dl.i0, torch.i0, x)
    np.testing.assert_allclose(ours, ref, rtol=1e-14)


def test_special_values_match_torch():
    x = np.array([0.0, -1.0, -2.0, 1.0, 2.0, np.inf])
    for ours_fn, ref_fn in ((dl.lgamma, torch.lgamma), (dl.digamma, torch.digamma)):
        ours, ref = _both(ours_fn, ref_fn, x)
        np.testing.assert_allclose(ours, ref, rtol=1e-15, atol=1e-15)
    ours = dl.polygamma(1, dl.tensor(np.array([0.0, np.inf, 1.0]))).numpy()
    np.testing.assert_allclose(ours, [np.inf, 0.0, math.pi ** 2 / 6], rtol=1e-15)


def test_float32_special_functions_are_rounded_float64():
    x = np.linspace(0.1, 20, 1001, dtype=np.float32)
    for name in ("lgamma", "digamma", "i0"):
        ours = getattr(dl, name)(dl.tensor(x)).numpy()
        assert ours.dtype == np.float32
        ref = getattr(torch, name)(torch.tensor(x, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(ours, ref, rtol=3e-7, atol=1e-7)


def test_bad_arguments_name_what_is_valid():
    with pytest.raises(ValueError, match="polygamma: n must be a non-negative integer"):
        dl.polygamma(-1, dl.ones(2))
    with pytest.raises(ValueError, match=r"mvlgamma: all elements must be greater than "
                                         r"\(p-1\)/2 = 1.0"):
        dl.mvlgamma(dl.ones(2), 3)
