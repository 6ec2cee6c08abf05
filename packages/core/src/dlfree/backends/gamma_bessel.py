"""The log-gamma, digamma and polygamma functions and the modified Bessel functions I0 and I1,
on any `xp` (NumPy alone has none of them, and the core does not depend on SciPy).

Every kernel computes in float64 and rounds to the input's dtype. The gamma family shifts
its argument up past `_SHIFT_TO` with the recurrence (Γ(x+1) = xΓ(x)), where the asymptotic
(Stirling / Euler-Maclaurin) series, cut after the terms below, is accurate to about 1e-16
relative; arguments below 1/2 use the reflection formulas. The Bessel functions sum their
power series for |x| <= 25 (positive terms, so no cancellation) and their asymptotic series
beyond. The tests state the accuracy against torch and math.lgamma.
"""

from __future__ import annotations

import math

_SHIFT_TO = 10.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Bernoulli numbers B_2, B_4, ..., B_16
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_BESSEL_SERIES_UP_TO = 25.0
_SERIES_TERMS = 60
_ASYMPTOTIC_TERMS = 20


def _f64(xp, x):
    return x.astype(xp.float64) if x.dtype != xp.float64 else x


def _shifted(xp, x, fn_of_z):
    """Shift z = x up by whole steps until z >= _SHIFT_TO, calling `fn_of_z(k_term)` to
    accumulate what each step contributes; returns z."""
    z = x.copy()
    finite = xp.where(xp.isfinite(x), x, _SHIFT_TO)
    steps = int(math.ceil(_SHIFT_TO - float(xp.min(finite)))) if x.size else 0
    for _ in range(max(steps, 0)):
        low = z < _SHIFT_TO
        if not bool(low.any()):
            break
        fn_of_z(low, z)
        z = xp.where(low, z + 1, z)
    return z


def lgamma(xp, x):
    """log|Γ(x)|: +inf at the poles 0, -1, -2, ..."""
    x64 = _f64(xp, x)
    reflect = x64 < 0.5
    y = xp.where(reflect, 1 - x64, x64)  # y >= 1/2
    log_prod = xp.zeros_like(y)

    def step(low, z):
        nonlocal log_prod
        log_prod = log_prod + xp.where(low, xp.log(z), 0)

    z = _shifted(xp, y, step)
    inv, inv2 = 1 / z, 1 / (z * z)
    series = xp.zeros_like(z)
    for j in range(len(_BERNOULLI), 0, -1):  # Σ B_2j / (2j (2j-1) z^(2j-1)), Horner in 1/z²
        series = series * inv2 + _BERNOULLI[j - 1] / (2 * j * (2 * j - 1))
    out = (z - 0.5) * xp.log(z) - z + _HALF_LOG_2PI + series * inv - log_prod
    # Γ(x)Γ(1-x) = π / sin(πx); sin from the fractional part keeps large |x| accurate
    frac = x64 - xp.floor(x64)
    sin_pi = xp.abs(xp.sin(math.pi * frac))
    with_reflection = math.log(math.pi) - xp.log(sin_pi) - out
    out = xp.where(reflect, with_reflection, out)
    out = xp.where(reflect & (frac == 0) | xp.isinf(x64), math.inf, out)
    return out.astype(x.dtype, copy=False)


def digamma(xp, x):
    """ψ(x) = d/dx log Γ(x): -inf at 0 (as torch), NaN at the negative integers."""
    x64 = _f64(xp, x)
    reflect = x64 < 0.5
    y = xp.where(reflect, 1 - x64, x64)
    total = xp.zeros_like(y)

    def step(low, z):
        nonlocal total
        total = total - xp.where(low, 1 / z, 0)

    z = _shifted(xp, y, step)
    inv2 = 1 / (z * z)
    series = xp.zeros_like(z)
    for j in range(len(_BERNOULLI), 0, -1):  # Σ B_2j / (2j z^(2j))
        series = series * inv2 + _BERNOULLI[j - 1] / (2 * j)
    out = xp.log(z) - 0.5 / z - series * inv2 + total
    # ψ(1-x) - ψ(x) = π cot(πx); cot from x minus its nearest integer
    near = x64 - xp.round(x64)
    with_reflection = out - math.pi / xp.tan(math.pi * near)
    out = xp.where(reflect, with_reflection, out)
    out = xp.where(reflect & (near == 0), math.nan, out)
    out = xp.where(x64 == 0, -math.inf, out)
    out = xp.where(x64 == math.inf, math.inf, xp.where(x64 == -math.inf, math.nan, out))
    return out.astype(x.dtype, copy=False)


def polygamma(xp, n: int, x):
    """ψ⁽ⁿ⁾(x) for n >= 1, as (-1)ⁿ⁺¹ n! ζ(n+1, x) (the Hurwitz zeta function); ±inf at the
    poles 0, -1, -2, ... (the sign ψ⁽ⁿ⁾ takes at 0⁺, as torch gives at 0); negative
    non-integer x sums the shift term by term."""
    if n == 0:
        return digamma(xp, x)
    x64 = _f64(xp, x)
    s = n + 1
    total = xp.zeros_like(x64)

    def step(low, z):
        nonlocal total
        total = total + xp.where(low, z ** (-s), 0)

    z = _shifted(xp, x64, step)
    # ζ(s, z) ≈ z^(1-s)/(s-1) + z^(-s)/2 + Σ B_2j/(2j)! s(s+1)...(s+2j-2) z^(-s-2j+1)
    tail = z ** (1 - s) / (s - 1) + 0.5 * z ** (-s)
    rising, power = float(s), z ** (-s - 1)
    for j in range(1, len(_BERNOULLI) + 1):
        tail = tail + _BERNOULLI[j - 1] / math.factorial(2 * j) * rising * power
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        power = power / (z * z)
    out = (-1) ** (n + 1) * math.factorial(n) * (total + tail)
    pole = (x64 <= 0) & (x64 == xp.floor(x64))
    out = xp.where(pole, math.inf if n % 2 else -math.inf, out)
    out = xp.where(x64 == math.inf, 0.0, out)
    return out.astype(x.dtype, copy=False)


def _bessel(xp, x, order: int):
    """I_order(|x|) for order 0 or 1, in float64."""
    a = xp.abs(_f64(xp, x))
    small = xp.minimum(a, _BESSEL_SERIES_UP_TO)
    quarter = small * small / 4
    term = xp.ones_like(a) if order == 0 else small / 2
    series = term
    for k in range(1, _SERIES_TERMS):
        term = term * quarter / (k * (k + order))
        series = series + term
    big = xp.maximum(a, _BESSEL_SERIES_UP_TO)
    term, total = xp.ones_like(a), xp.ones_like(a)
    mu = 4 * order * order
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * (-(mu - (2 * k - 1) ** 2)) / (8 * k * big)
        total = total + term
    # e^x / sqrt(2πx) overflows past x ≈ 709 exactly when I(x) does
    asymptotic = xp.exp(big) / xp.sqrt(2 * math.pi * big) * total
    return xp.where(a <= _BESSEL_SERIES_UP_TO, series, asymptotic)


def i0(xp, x):
    """The modified Bessel function of the first kind of order 0 (even)."""
    return _bessel(xp, x, 0).astype(x.dtype, copy=False)


def i1(xp, x):
    """The modified Bessel function of the first kind of order 1 (odd)."""
    return (xp.sign(x) * _bessel(xp, x, 1)).astype(x.dtype, copy=False)
