"""The loops of `numba_kernels`, compiled by numba (imported only when it is installed).

Every loop writes into arrays its caller allocated and returns nothing; the callers
(`special._blockwise`, `ops.norm`, `ops.lstm_kernel`) split the work into blocks and
threads as for their NumPy kernels. Elementwise loops compile with fused multiply-adds
only, so they vectorize without changing how NaN and infinities come out; the row
reductions of layer norm also let the compiler reorder the sum (vector lanes), a fixed
order in the machine code, so a row's sums are the same every run.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .special import _GELU_EXP_ARG32, _INV_SQRT_2PI

_ELEMENTWISE = dict(fastmath={"contract"}, error_model="numpy", nogil=True, cache=True)
_REDUCING = dict(fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True, cache=True)
_INLINE = dict(fastmath={"contract"}, error_model="numpy", inline="always")

_Q0, _Q1, _Q2, _Q3, _Q4, _Q5, _Q6, _Q7 = _GELU_EXP_ARG32
_F = np.float32
_LOG2E, _LN2_HI, _LN2_LO = _F(1.4426950408889634), _F(0.693359375), _F(-2.12194440e-4)
# exp(r) - 1 - r = r² (1/2 + r/6 + ...) on |r| <= ln(2)/2, minimax coefficients (Cephes expf)
_E0, _E1, _E2, _E3, _E4, _E5 = (_F(c) for c in (5.0000001201e-1, 1.6666665459e-1,
                                                 4.1665795894e-2, 8.3334519073e-3,
                                                 1.3981999507e-3, 1.9875691500e-4))
_INV_SQRT_2PI32 = _F(_INV_SQRT_2PI)


@intrinsic
def _float_from_bits(typingctx, bits):
    """The float32 whose IEEE bits are the int32 `bits`."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@njit(**_INLINE)
def _times_power_of_two(p, n):
    """p·2**n for an int32 n in [-150, 128], as two products by normal float32 powers (2**n
    itself may not be one), so that it overflows or underflows only where the result does."""
    half = n >> 1
    return (p * _float_from_bits((half + np.int32(127)) << 23)
            * _float_from_bits((n - half + np.int32(127)) << 23))


@njit(**_INLINE)
def _exp(v):
    """exp of a float32 to about 1 ulp: 2**n · exp(r) with r = v - n·ln 2 (in two parts,
    exactly), exp(r) by its polynomial; inf above 88.8, 0 below -104 (with gradual
    underflow), NaN for NaN."""
    v = min(max(v, _F(-104.0)), _F(88.8))
    n = np.floor(v * _LOG2E + _F(0.5))
    r = (v - n * _LN2_HI) - n * _LN2_LO
    p = ((((_E5 * r + _E4) * r + _E3) * r + _E2) * r + _E1) * r + _E0
    return _times_power_of_two(p * r * r + r + _F(1), np.int32(n))


@njit(**_INLINE)
def _log_odds_neg(v):
    """-log(Phi(v) / (1 - Phi(v))), the argument of `special._gelu_block`'s exp."""
    s = v * v
    return v * (_Q0 + s * (_Q1 + s * (_Q2 + s * (_Q3 + s * (_Q4 + s * (_Q5 + s * (_Q6
                                                                              + s * _Q7)))))))


@njit(**_ELEMENTWISE)
def gelu(x, out):
    """out = x·Phi(x) = x / (1 + exp(x·Q(x²))) over 1-d float32 arrays."""
    for i in range(x.size):
        v = x[i]
        out[i] = v / (_F(1) + _exp(_log_odds_neg(v)))


@njit(**_ELEMENTWISE)
def gelu_grad(g, x, out):
    """out = g·(Phi(x) + x·phi(x)) over 1-d float32 arrays: GELU's backward."""
    for i in range(x.size):
        v = x[i]
        cdf = _F(1) / (_F(1) + _exp(_log_odds_neg(v)))
        out[i] = g[i] * (cdf + v * _exp(v * v * _F(-0.5)) * _INV_SQRT_2PI32)


@njit(**_REDUCING)
def layer_norm_rows(x, w, b, eps, out, mean, invstd):
    """Each row of 2-d `x` normalised, times `w` plus `b`, into `out`; the rows' means and
    1 / sqrt(var + eps) into `mean` and `invstd` (see `ops.norm._layer_norm_rows`)."""
    rows, size = x.shape
    for i in range(rows):
        total = x.dtype.type(0)
        for j in range(size):
            total += x[i, j]
        m = total * (x.dtype.type(1) / size)
        squares = x.dtype.type(0)
        for j in range(size):
            d = x[i, j] - m
            squares += d * d
        a = np.sqrt(x.dtype.type(size)) / np.sqrt(squares + size * eps)
        for j in range(size):
            out[i, j] = (x[i, j] - m) * a * w[j] + b[j]
        mean[i], invstd[i] = m, a


@njit(**_REDUCING)
def layer_norm_rows_grads(g, x, w, mean, invstd, gx, gw, gb, need_x, need_w, need_b):
    """The gradients of `layer_norm_rows` for output gradient `g`: grad_x into `gx` (when
    `need_x`), and the sums over these rows of g·xhat and g added to `gw` and `gb` (when
    `need_w`, `need_b`); see `ops.norm._layer_norm_rows_grads` for the formula."""
    rows, size = x.shape
    scale = x.dtype.type(-1) / size
    for i in range(rows):
        m, a = mean[i], invstd[i]
        if need_b:
            for j in range(size):
                gb[j] += g[i, j]
        if need_w:
            for j in range(size):
                gw[j] += g[i, j] * (x[i, j] - m) * a
        if not need_x:
            continue
        gw_sum, gwc_sum = x.dtype.type(0), x.dtype.type(0)
        for j in range(size):
            gwj = g[i, j] * w[j]
            gw_sum += gwj
            gwc_sum += gwj * (x[i, j] - m)
        shift, slope = a * gw_sum * scale, a * a * a * gwc_sum * scale
        for j in range(size):
            gx[i, j] = g[i, j] * w[j] * a + (x[i, j] - m) * slope + shift


@njit(**_ELEMENTWISE)
def lstm_cell_grads(gates, tanh_c, c_prev, grad_h, grad_c, dh, dc, d_gates):
    """One step of an LSTM's backward through time (`ops.lstm_kernel._cell_grads`, the same
    in ufuncs): adds the step's output gradients `grad_h`, `grad_c` to the running `dh`,
    `dc` (B, H), writes the gates' pre-activation gradients `d_gates` (B, 4H) from the
    activated `gates` (i, f, g, o), the step's `tanh_c` and `c_prev`, and leaves in `dc` the
    gradient of c_prev; `dh` is then the caller's, from d_gates @ W_hh."""
    batch, n = dc.shape
    for r in range(batch):
        for j in range(n):
            i, f, g, o = gates[r, j], gates[r, n + j], gates[r, 2 * n + j], gates[r, 3 * n + j]
            t = tanh_c[r, j]
            h_grad = dh[r, j] + grad_h[r, j]
            c_grad = dc[r, j] + grad_c[r, j] + h_grad * o * (_F(1) - t * t)
            d_gates[r, j] = c_grad * g * i * (_F(1) - i)
            d_gates[r, n + j] = c_grad * c_prev[r, j] * f * (_F(1) - f)
            d_gates[r, 2 * n + j] = c_grad * i * (_F(1) - g * g)
            d_gates[r, 3 * n + j] = h_grad * t * o * (_F(1) - o)
            dc[r, j] = c_grad * f
