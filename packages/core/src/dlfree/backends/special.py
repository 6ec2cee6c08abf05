"""Special functions the array modules lack (erf, erfc, erfinv, GELU's normal CDF), on any `xp`.

float64 computes with Chebyshev series to about 1e-15 relative; erfc and erfinv compute
lower precisions the same way and round. erf and GELU in float32 (and float16) compute in
float32 from one polynomial through tanh or exp, block by block so that the temporaries stay
in cache: about 20 passes over 128 KiB instead of 40 over the whole array. There, large |x|
overflows intermediate values to inf, which tanh and exp turn into the right limits; the
kernels expect the backend's context that ops run in, where NumPy does not warn of it.
With numba installed, float32 GELU and its gradient run as compiled loops over the same
blocks instead (`numba_kernels`).

The Chebyshev coefficients were computed for this file in 50-digit arithmetic (mpmath), as
the coefficients of the smooth functions named beside them.
"""

from __future__ import annotations

import math

import numpy as np

from ..threads import parallel_for
from . import numba_kernels

# erf(x) / x as a series in T_k(2x² - 1), for |x| < 1.
_ERF_OVER_X = (
    0.9754769393826541, -0.14226120510371365, 0.010035582187599796, -0.0005768764699767485,
    2.741993125219606e-05, -1.1043175507344507e-06, 3.8488755420345036e-08,
    -1.1808582533875466e-09, 3.2334215826050907e-11, -7.991015947004549e-13,
    1.7990725113961456e-14, -3.718635487818693e-16, 7.103599003714253e-18,
)
# x·exp(x²)·erfc(x) as a series in T_k(2/x - 1), for x >= 1; it tends to 1/sqrt(pi).
_SCALED_ERFC = (
    0.5039781175024709, -0.07211219804839038, -0.0074953160268578034, 0.0038380518956879846,
    -0.0006410126699713453, -1.5540548808156943e-05, 4.32302431017444e-05,
    -1.3769374457891233e-05, 1.8747983544787693e-06, 3.6072578618964214e-07,
    -3.034436904359487e-07, 9.587247009460417e-08, -1.3583267556330024e-08,
    -3.2191571228104436e-09, 2.8746760803452877e-09, -1.0331200435795728e-09,
    1.924641117055346e-10, 1.9607066076543724e-11, -3.2195507081902384e-11,
    1.4424036270511823e-11, -3.732071412129788e-12, 2.1940352869597366e-13,
    3.5312091100199347e-13, -2.2432582015216673e-13, 7.965962817330427e-14,
    -1.5296191058244737e-14, -2.050885958379538e-15, 3.321826566135263e-15,
    -1.6732296762592147e-15, 5.23700675924776e-16, -7.301626716653906e-17,
    -3.260028894289172e-17, 3.094360771844692e-17, -1.4283526727613248e-17,
    4.2129550754386346e-18,
)
_HALF_SQRT_PI = math.sqrt(math.pi) / 2
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)

# float32: erf(x) = tanh(x·P(x²)), P the polynomial that minimises the largest relative error
# of erf on |x| <= 3.9 (fitted for this file by linear programming on a dense grid against
# math.erf). Evaluated in float32 over every float32 its error is below 1.5e-7 absolute and
# 2.6e-7 relative (tanh's own rounding, up to 1.4 ulp, is most of it); past 3.9, where erf
# rounds to ±1, P keeps growing, so tanh does too. Coefficients of x²ᵏ, k = 0, 1, ...
_ERF_TANH_ARG = (
    1.1283792471875302, 0.10276986411723055, -0.0001952881556663038, -0.0006148382334973107,
    8.459657232030989e-05, -4.794601109301973e-06, 2.7575525679943435e-08,
    5.421628451650593e-09,
)
# The same for the normal CDF: Phi(x) = (1 + tanh(a)) / 2 = 1 / (1 + exp(-2a)) with
# a = (x/√2)·P(x²/2), written as exp(x·Q(x²)); the exp form has no cancellation for x < 0.
_GELU_EXP_ARG = tuple(-math.sqrt(2) * c / 2**k for k, c in enumerate(_ERF_TANH_ARG))
# the kernels take them as float32 scalars: a Python float costs each call a conversion
_ERF_TANH_ARG32, _GELU_EXP_ARG32 = (tuple(map(np.float32, c)) for c in (_ERF_TANH_ARG,
                                                                         _GELU_EXP_ARG))
# float32 elements per block: a block's inputs, output and two scratch arrays fit in L2
_BLOCK = 131072
# a thread takes at least this many blocks: less work than that is not worth a thread
_BLOCKS_PER_THREAD = 2


class _Precision:
    """The series terms and Halley steps one output dtype needs.

    float64 keeps every term; float32 and float16 stop at terms below 1e-10, still 600
    times finer than float32's rounding, which makes erfc ~1.4x and erfinv ~1.8x faster.
    """

    def __init__(self, drop_below: float, halley_steps: int):
        def needed(coefs):
            return coefs[:max(k for k, c in enumerate(coefs) if abs(c) >= drop_below) + 1]

        self.erf_over_x = needed(_ERF_OVER_X)
        self.scaled_erfc = needed(_SCALED_ERFC)
        # Halley converges cubically, but with a constant ~(1 + z²)/3 that is ~12 near
        # erfinv = 6: from the initial guess's ~2e-3 relative error, the second step
        # reaches ~2e-15 there and the third 1e-16.
        self.halley_steps = halley_steps


_DOUBLE, _SINGLE = _Precision(0.0, 3), _Precision(1e-10, 2)


def _chebyshev(coefs, s):
    """sum_k coefs[k] T_k(s), by Clenshaw's recurrence."""
    two_s = 2 * s
    b1 = b2 = 0 * s
    for c in coefs[:0:-1]:
        b1, b2 = two_s * b1 - b2 + c, b1
    return s * b1 - b2 + coefs[0]


def _erf_center(x, p: _Precision):
    """erf(x) for |x| < 1."""
    return x * _chebyshev(p.erf_over_x, 2 * x * x - 1)


def _erfc_tail(xp, x, p: _Precision):
    """erfc(x) for x >= 1, accurate in relative terms until it underflows (x ~ 27)."""
    x = xp.minimum(x, 40.0)  # erfc(40) is 0 in float64; this keeps inf out of x - hi
    hi = x.astype(xp.float32).astype(xp.float64)
    # exp(-x²) as exp(-hi²)·exp(-(x-hi)(x+hi)): hi² is exact, so x²'s rounding error
    # (up to ~1e-13 of exp's argument near x = 27) does not reach the result
    damp = xp.exp(-hi * hi) * xp.exp(-(x - hi) * (x + hi))
    return damp / x * _chebyshev(p.scaled_erfc, 2 / x - 1)


def _erf(xp, x, p: _Precision):
    """erf of a 1-d float64 array."""
    return _by_region(xp, x, lambda t: _erf_center(t, p),
                      lambda t: xp.copysign(1 - _erfc_tail(xp, xp.abs(t), p), t))


def _erfc(xp, x, p: _Precision):
    """erfc of a 1-d float64 array."""
    def tail(t):
        upper = _erfc_tail(xp, xp.abs(t), p)
        return xp.where(t > 0, upper, 2 - upper)

    return _by_region(xp, x, lambda t: 1 - _erf_center(t, p), tail)


def _by_region(xp, x, center, tail):
    """`center` where |x| < 1 and `tail` elsewhere (NaN included), of a 1-d array."""
    out = xp.empty_like(x)
    inner = xp.abs(x) < 1
    out[inner] = center(x[inner])
    out[~inner] = tail(x[~inner])
    return out


def _elementwise(fn, doc: str, single=None):
    """`fn(xp, flat_float64, precision)` as a kernel on any float array, keeping its dtype;
    a block kernel `single` (see `_blockwise`), when given, computes float32 and float16."""
    def kernel(xp, x):
        if single is not None and x.dtype.itemsize <= 4:
            return _blockwise(xp, single, x.dtype, x)
        p = _DOUBLE if x.dtype == xp.float64 else _SINGLE
        out = fn(xp, x.astype(xp.float64).reshape(-1), p)
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    kernel.__name__, kernel.__doc__ = fn.__name__.lstrip("_"), doc
    return kernel


# ------------------------------------------------------------- float32, in blocks
def _blockwise(xp, block, dtype, *inputs, compiled: str | None = None):
    """`block(xp, out, *inputs, s, t)` on float32 blocks of at most _BLOCK elements of the
    same-shape `inputs` (s and t are scratch of the block's size); the result in `dtype`.
    On NumPy, large arrays are shared out among the intra-op threads in runs of blocks, and
    the loop named `compiled` in `numba_kernels` (the same formula) replaces `block` when
    numba is there."""
    flat = [xp.ascontiguousarray(a, dtype=xp.float32).reshape(-1) for a in inputs]
    out = xp.empty(inputs[0].shape, xp.float32)
    flat_out = out.reshape(-1)
    n = flat_out.size
    loops = None if compiled is None else numba_kernels.kernels_for(xp, "f", *flat)

    def run(first: int, last: int) -> None:
        if loops is not None:
            start, stop = first * _BLOCK, min(last * _BLOCK, n)
            getattr(loops, compiled)(*[a[start:stop] for a in flat], flat_out[start:stop])
            return
        s, t = xp.empty(min(n, _BLOCK), xp.float32), xp.empty(min(n, _BLOCK), xp.float32)
        for start in range(first * _BLOCK, min(last * _BLOCK, n), _BLOCK):
            stop = min(start + _BLOCK, n)
            block(xp, flat_out[start:stop], *[a[start:stop] for a in flat], s[:stop - start],
                  t[:stop - start])

    blocks = -(-n // _BLOCK)
    if xp is np:
        parallel_for(blocks, run, min_chunk=_BLOCKS_PER_THREAD)
    else:
        run(0, blocks)
    return out if out.dtype == dtype else out.astype(dtype)


def _x_times_poly(xp, coefs, x, s, out):
    """out = x·sum_k coefs[k] s^k, by Horner's rule in place (s = x², computed here)."""
    xp.multiply(x, x, out=s)
    xp.multiply(s, coefs[-1], out=out)
    for c in coefs[-2:0:-1]:
        xp.add(out, c, out=out)
        xp.multiply(out, s, out=out)
    xp.add(out, coefs[0], out=out)
    xp.multiply(out, x, out=out)


def _erf_block(xp, out, x, s, _):
    _x_times_poly(xp, _ERF_TANH_ARG32, x, s, out)
    xp.tanh(out, out=out)


def _gelu_block(xp, out, x, s, _):
    _x_times_poly(xp, _GELU_EXP_ARG32, x, s, out)
    xp.exp(out, out=out)  # 1/Phi(x) - 1; inf far left, where x / inf gives GELU's -0
    xp.add(out, 1.0, out=out)
    xp.divide(x, out, out=out)


def _gelu_grad_block(xp, out, g, x, s, t):
    _x_times_poly(xp, _GELU_EXP_ARG32, x, s, t)
    xp.exp(t, out=t)
    xp.add(t, 1.0, out=t)
    xp.divide(1.0, t, out=t)  # Phi(x)
    xp.multiply(s, -0.5, out=s)
    xp.exp(s, out=s)
    xp.multiply(s, x, out=s)
    xp.multiply(s, _INV_SQRT_2PI, out=s)  # x·phi(x)
    xp.add(t, s, out=t)
    xp.multiply(t, g, out=out)


# ------------------------------------------------------------------------ GELU
def _normal_cdf(xp, x):
    """Phi(x) of a float64 array, from erfc so that the left tail keeps its digits."""
    return 0.5 * _erfc(xp, (x * -_SQRT_HALF).reshape(-1), _DOUBLE).reshape(x.shape)


def gelu(xp, x):
    """GELU, x·Phi(x) with Phi the standard normal CDF, of a float array (keeping its dtype)."""
    if x.dtype.itemsize <= 4:
        return _blockwise(xp, _gelu_block, x.dtype, x, compiled="gelu")
    x64 = x.astype(xp.float64, copy=False)
    return (x64 * _normal_cdf(xp, x64)).astype(x.dtype, copy=False)


def gelu_grad(xp, g, x):
    """g·GELU'(x) = g·(Phi(x) + x·phi(x)), phi the standard normal density: GELU's backward."""
    dtype = xp.result_type(g, x)
    if dtype.itemsize <= 4:
        return _blockwise(xp, _gelu_grad_block, dtype, g, x, compiled="gelu_grad")
    x64 = x.astype(xp.float64, copy=False)
    pdf = xp.exp(-0.5 * x64 * x64) * _INV_SQRT_2PI
    return (g * (_normal_cdf(xp, x64) + x64 * pdf)).astype(dtype, copy=False)


def _initial_erfinv(xp, a, log_1_minus_a2):
    """A guess for erfinv(a), 0 <= a < 1, good to ~2e-3 relative (Winitzki's formula)."""
    k = 0.147
    c = -log_1_minus_a2 / k
    b = 2 / (math.pi * k) + log_1_minus_a2 / 2
    root = xp.sqrt(b * b + c)
    # sqrt(b² + c) - b, without cancelling digits when b > 0
    return xp.sqrt(xp.where(b > 0, c / (root + xp.abs(b)), root - b))


def _halley(xp, z, residual, steps: int):
    """Refine z, a root of residual(z) = erf(z) - a, by Halley steps."""
    for _ in range(steps):
        step = residual(z) * _HALF_SQRT_PI * xp.exp(z * z)  # residual / erf'(z)
        z = z - step / (1 + z * step)  # erf''/erf' = -2z gives Halley's correction
    return z


def _erfinv(xp, y, p: _Precision):
    """erfinv of a 1-d float64 array."""
    a = xp.abs(y)
    out = xp.where(a == 1, math.inf, math.nan)
    center = a <= 0.5
    ac = a[center]
    out[center] = _halley(xp, _initial_erfinv(xp, ac, xp.log1p(-ac * ac)),
                          lambda z: _erf(xp, z, p) - ac, p.halley_steps)
    # near ±1 the residual comes from erfc, as (1 - a) - erfc(z), where both are exact
    tail = (a > 0.5) & (a < 1)
    at = a[tail]
    out[tail] = _halley(xp, _initial_erfinv(xp, at, xp.log((1 - at) * (1 + at))),
                        lambda z: (1 - at) - _erfc(xp, z, p), p.halley_steps)
    return xp.copysign(out, y)


erf = _elementwise(_erf, "The error function 2/sqrt(pi) * integral_0^x exp(-t²) dt.",
                  single=_erf_block)
erfc = _elementwise(_erfc, "The complementary error function 1 - erf(x), accurate where tiny.")
erfinv = _elementwise(_erfinv, "The inverse error function on [-1, 1] (±inf at ±1, NaN outside).")
