"""The loops of `numba_kernels`, compiled by numba (imported only when it is installed).

Every loop writes into arrays its caller allocated and returns nothing; the callers
(`special._blockwise`, `ops.norm`, `ops.lstm_kernel`, `ops.conv`, `im2col`) split the
work into blocks and threads as for their NumPy kernels. Elementwise loops compile with
fused multiply-adds only, so they vectorize without changing how NaN and infinities come
out; the row reductions of layer norm also let the compiler reorder the sum (vector
lanes), a fixed order in the machine code, so a row's sums are the same every run. Loops read slices
whose start is computed once (never an index that could be negative, which numba would
wrap around), so their loads stay contiguous and vectorize.
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


# tanh(z) = z·P(z²) for |z| < 0.625: P fitted by least squares to tanh(z)/z in float64,
# about 1.3 ulp in float32 (tests/core/test_recurrent_kernels.py measures it)
_T0, _T1, _T2, _T3, _T4, _T5, _T6 = (_F(c) for c in (1.0, -0.33333331, 0.13333212,
                                                     -0.05394824, 0.02171071, -0.00820523,
                                                     0.00217045))


@njit(**_INLINE)
def _sigmoid(v):
    """1 / (1 + exp(-v)) of a float32, to about 2 ulp; NaN for NaN."""
    return _F(1) / (_F(1) + _exp(-v))


@njit(**_INLINE)
def _tanh(v):
    """tanh of a float32 to under 3 ulp: its odd polynomial near 0, where 1 - 2 / (1 + e)
    would cancel, and that form beyond |v| = 0.625 (with v's sign); NaN for NaN."""
    a, s = abs(v), v * v
    near = v * (_T0 + s * (_T1 + s * (_T2 + s * (_T3 + s * (_T4 + s * (_T5 + s * _T6))))))
    far = _F(1) - _F(2) / (_F(1) + _exp(_F(2) * a))
    return near if a < _F(0.625) else (-far if v < 0 else far)


@njit(**_ELEMENTWISE)
def lstm_cell(a, x, b, c_prev, offset, out, tanh_c):
    """One LSTM step after its hidden product `a` (B, 4H), in float32: `a` += the input
    share `x` (B, 4H) and `b` (4H,), activated in place (sigmoid for the gates i, f, o,
    tanh for g, torch's order); then c = f·c_prev + i·g, h = o·tanh(c) into `out` (B, 2H)
    as h then c, and tanh(c) into `tanh_c` (B, H). c_prev is c_prev[:, offset:offset + H]
    (the previous step's `out`, or c0). The same formulas as `ops.lstm_kernel._cell`."""
    batch, n = tanh_c.shape
    for r in range(batch):
        # every loop over slices from 0: LLVM left loops over a range(k, m) unvectorized
        sig, sig_x, sig_b = a[r, :2 * n], x[r, :2 * n], b[:2 * n]
        for j in range(2 * n):
            sig[j] = _sigmoid(sig[j] + sig_x[j] + sig_b[j])
        g, g_x, g_b = a[r, 2 * n:3 * n], x[r, 2 * n:3 * n], b[2 * n:3 * n]
        for j in range(n):
            g[j] = _tanh(g[j] + g_x[j] + g_b[j])
        o, o_x, o_b = a[r, 3 * n:], x[r, 3 * n:], b[3 * n:]
        for j in range(n):
            o[j] = _sigmoid(o[j] + o_x[j] + o_b[j])
        i, f = sig[:n], sig[n:]
        previous, h, c, t = c_prev[r, offset:offset + n], out[r, :n], out[r, n:], tanh_c[r]
        for j in range(n):
            state = f[j] * previous[j] + i[j] * g[j]
            squashed = _tanh(state)
            c[j], t[j], h[j] = state, squashed, o[j] * squashed


@njit(**_ELEMENTWISE)
def lstm_cell_grads(gates, tanh_c, c_prev, offset, grad, dh, dc, d_gates):
    """One step of an LSTM's backward through time (`ops.lstm_kernel._cell_grads`, the same
    in ufuncs): adds the step's output gradient `grad` (B, 2H: h's, then c's) to the
    running `dh`, `dc` (B, H), writes the gates' pre-activation gradients `d_gates`
    (B, 4H) from the activated `gates` (i, f, g, o), the step's `tanh_c` and c_prev (its
    columns offset:offset + H), and leaves in `dc` the gradient of c_prev; `dh` is then
    the caller's, from d_gates @ W_hh. Its loops run over row slices from 0, as
    `lstm_cell`'s."""
    batch, n = dc.shape
    one = _F(1)
    for r in range(batch):
        i, f, g, o = gates[r, :n], gates[r, n:2 * n], gates[r, 2 * n:3 * n], gates[r, 3 * n:]
        di, df = d_gates[r, :n], d_gates[r, n:2 * n]
        dg, do = d_gates[r, 2 * n:3 * n], d_gates[r, 3 * n:]
        t, previous = tanh_c[r], c_prev[r, offset:offset + n]
        grad_h, grad_c, h_grads, c_grads = grad[r, :n], grad[r, n:], dh[r], dc[r]
        for j in range(n):
            h_grad = h_grads[j] + grad_h[j]
            c_grad = c_grads[j] + grad_c[j] + h_grad * o[j] * (one - t[j] * t[j])
            di[j] = c_grad * g[j] * i[j] * (one - i[j])
            df[j] = c_grad * previous[j] * f[j] * (one - f[j])
            dg[j] = c_grad * i[j] * (one - g[j] * g[j])
            do[j] = h_grad * t[j] * o[j] * (one - o[j])
            c_grads[j] = c_grad * f[j]


@njit(**_ELEMENTWISE)
def relu(x, out):
    """out = max(0, x) over 1-d arrays as NumPy's maximum(0, x) gives it: x itself where
    it is not below 0 (-0.0 and NaN kept), else 0."""
    zero = x.dtype.type(0)
    for i in range(x.size):
        v = x[i]
        out[i] = zero if v < zero else v


@njit(**_ELEMENTWISE)
def relu_grad(g, y, out):
    """out = g · (y > 0) over 1-d arrays, the mask times g as `ops.elementwise._masked`
    computes it (so 0 · g: a NaN or inf g gives NaN where y is not positive)."""
    zero, one = y.dtype.type(0), y.dtype.type(1)
    for i in range(y.size):
        out[i] = (one if y[i] > zero else zero) * g[i]


# ------------------------------------------------- 3x3 convolutions, taps fused in cache
@njit(**_INLINE)
def _nine_taps(w, o, c):
    """The nine tap weights of output channel `o`, input channel `c`, as scalars."""
    return (w[o, c, 0], w[o, c, 1], w[o, c, 2], w[o, c, 3], w[o, c, 4], w[o, c, 5],
            w[o, c, 6], w[o, c, 7], w[o, c, 8])


@njit(**_INLINE)
def _dot9(k, x0, x1, x2, x3, x4, x5, x6, x7, x8):
    return (k[0] * x0 + k[1] * x1 + k[2] * x2 + k[3] * x3 + k[4] * x4 + k[5] * x5
            + k[6] * x6 + k[7] * x7 + k[8] * x8)


@njit(**_INLINE)
def _add9(s, g, x0, x1, x2, x3, x4, x5, x6, x7, x8):
    return (s[0] + g * x0, s[1] + g * x1, s[2] + g * x2, s[3] + g * x3, s[4] + g * x4,
            s[5] + g * x5, s[6] + g * x6, s[7] + g * x7, s[8] + g * x8)


@njit(**_ELEMENTWISE)
def conv_nine_taps(image, w, bias, shifts, acc, y, span, rows, lo, hi):
    """y[n, o, i, j] = bias[o] + sum over c and the nine taps t of w[o, c, t] ·
    image[c, q + shifts[t]], q the output's position in the shifted layout (`ops.conv`):
    a stride-1 convolution, four output channels at a time over `rows` rows of the layout,
    their partial sums in the (4, rows · row length) scratch `acc`, which stays in cache.

    `image` is (C, length), the padded images (C, P0, N, P1) flattened per channel;
    `w` is (O', C, 9) with O' the O of `y` (N, O, G0, G1) rounded up to a multiple of 4;
    `bias` (O,) or empty; every q < span plus a shift lies inside `image`. Work item b of
    lo:hi is row block b // (O' / 4) of output channels 4·(b % (O' / 4)) onwards."""
    channels, quads = image.shape[0], w.shape[0] // 4
    batch, out_channels, grid1 = y.shape[0], y.shape[1], y.shape[3]
    width = acc.shape[1] // rows
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = (shifts[0], shifts[1], shifts[2], shifts[3],
                                          shifts[4], shifts[5], shifts[6], shifts[7],
                                          shifts[8])
    for b in range(lo, hi):
        start, o = (b // quads) * rows * width, 4 * (b % quads)
        stop = min(span, start + rows * width)
        a0, a1, a2, a3 = (acc[0, :stop - start], acc[1, :stop - start],
                          acc[2, :stop - start], acc[3, :stop - start])
        a0[:], a1[:], a2[:], a3[:] = 0, 0, 0, 0
        for c in range(channels):
            x = image[c]
            y0, y1, y2 = x[start + s0:stop + s0], x[start + s1:stop + s1], x[start + s2:stop + s2]
            y3, y4, y5 = x[start + s3:stop + s3], x[start + s4:stop + s4], x[start + s5:stop + s5]
            y6, y7, y8 = x[start + s6:stop + s6], x[start + s7:stop + s7], x[start + s8:stop + s8]
            k0, k1 = _nine_taps(w, o, c), _nine_taps(w, o + 1, c)
            k2, k3 = _nine_taps(w, o + 2, c), _nine_taps(w, o + 3, c)
            for i in range(stop - start):
                x0, x1, x2, x3, x4 = y0[i], y1[i], y2[i], y3[i], y4[i]
                x5, x6, x7, x8 = y5[i], y6[i], y7[i], y8[i]
                a0[i] += _dot9(k0, x0, x1, x2, x3, x4, x5, x6, x7, x8)
                a1[i] += _dot9(k1, x0, x1, x2, x3, x4, x5, x6, x7, x8)
                a2[i] += _dot9(k2, x0, x1, x2, x3, x4, x5, x6, x7, x8)
                a3[i] += _dot9(k3, x0, x1, x2, x3, x4, x5, x6, x7, x8)
        for r in range(0, stop - start, width):  # each row's kept outputs into y
            row = (start + r) // width
            n, g = row % batch, row // batch
            for k in range(min(4, out_channels - o)):
                source, target = acc[k, r:r + grid1], y[n, o + k, g]
                shift = bias[o + k] if bias.size else y.dtype.type(0)
                for j in range(grid1):
                    target[j] = source[j] + shift


@njit(**_REDUCING)
def conv_nine_taps_weight_grad(image, grads, offset, shifts, dw, span, chunk, lo, hi):
    """dw[o, c, t] += sum over q < span of grads[o, offset + q] · image[c, q + shifts[t]]:
    the weight gradient of `conv_nine_taps` for output gradients on the shifted grid from
    `offset` on in `grads` (O, >= offset + span), zero where outputs are dropped; `dw`
    (O, C, 9) starts zeroed.

    Work items lo:hi are pairs of output channels (2·p, 2·p + 1; the last alone when O is
    odd); each runs over the columns `chunk` at a time, every channel's chunk read once
    for the pair, so a result is summed in the same order whichever thread computes it."""
    channels, last = image.shape[0], grads.shape[0] - 1
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = (shifts[0], shifts[1], shifts[2], shifts[3],
                                          shifts[4], shifts[5], shifts[6], shifts[7],
                                          shifts[8])
    z = dw.dtype.type(0)
    for start in range(0, span, chunk):
        stop = min(span, start + chunk)
        for p in range(lo, hi):
            o = 2 * p
            g0 = grads[o, offset + start:offset + stop]
            g1 = grads[min(o + 1, last), offset + start:offset + stop]
            for c in range(channels):
                x = image[c]
                y0, y1, y2 = (x[start + s0:stop + s0], x[start + s1:stop + s1],
                              x[start + s2:stop + s2])
                y3, y4, y5 = (x[start + s3:stop + s3], x[start + s4:stop + s4],
                              x[start + s5:stop + s5])
                y6, y7, y8 = (x[start + s6:stop + s6], x[start + s7:stop + s7],
                              x[start + s8:stop + s8])
                s, t = (z, z, z, z, z, z, z, z, z), (z, z, z, z, z, z, z, z, z)
                for i in range(stop - start):
                    x0, x1, x2, x3, x4 = y0[i], y1[i], y2[i], y3[i], y4[i]
                    x5, x6, x7, x8 = y5[i], y6[i], y7[i], y8[i]
                    s = _add9(s, g0[i], x0, x1, x2, x3, x4, x5, x6, x7, x8)
                    t = _add9(t, g1[i], x0, x1, x2, x3, x4, x5, x6, x7, x8)
                for k in range(9):
                    dw[o, c, k] += s[k]
                if o < last:
                    for k in range(9):
                        dw[o + 1, c, k] += t[k]


# ------------------------------------------------------------ batch norm, per channel
@njit(**_REDUCING)
def batch_norm_moments(x, mean, var, lo, hi):
    """The mean and biased variance of each channel c in lo:hi of (N, C, L) `x` into
    `mean[c]`, `var[c]`: two passes over the channel, the second over x - mean (no
    temporary array), every sum over each image's row and then the images in order."""
    batch, _, size = x.shape
    count = x.dtype.type(batch * size)  # in x's dtype, so the passes stay in it
    for c in range(lo, hi):
        total = x.dtype.type(0)
        for n in range(batch):
            row = x[n, c]
            for j in range(size):
                total += row[j]
        m = total / count
        squares = x.dtype.type(0)
        for n in range(batch):
            row = x[n, c]
            for j in range(size):
                d = row[j] - m
                squares += d * d
        mean[c], var[c] = m, squares / count


@njit(**_ELEMENTWISE)
def batch_norm_apply(x, mean, scale, shift, out, lo, hi):
    """out = (x - mean[c]) · scale[c] + shift[c] for channels lo:hi of (N, C, L) `x`."""
    batch, _, size = x.shape
    for n in range(batch):
        for c in range(lo, hi):
            source, target = x[n, c], out[n, c]
            m, a, b = mean[c], scale[c], shift[c]
            for j in range(size):
                target[j] = (source[j] - m) * a + b


@njit(**_REDUCING)
def batch_norm_grads(g, x, mean, invstd, scale, gx, gw, gb, lo, hi):
    """Batch norm's gradients in training for channels lo:hi of (N, C, L) `g` and `x`:
    gb[c] = sum g, gw[c] = sum g·xhat (one pass), then in a second
    gx = (g - gb[c] / count - xhat · gw[c] / count) · scale[c], scale = invstd · weight,
    the formula of `ops.norm.Normalize._channel_grads`."""
    batch, _, size = x.shape
    count = x.dtype.type(batch * size)  # in x's dtype, so the passes stay in it
    for c in range(lo, hi):
        m, a = mean[c], invstd[c]
        total, dot = x.dtype.type(0), x.dtype.type(0)
        for n in range(batch):
            grads, row = g[n, c], x[n, c]
            for j in range(size):
                total += grads[j]
                dot += grads[j] * (row[j] - m)
        gb[c], gw[c] = total, dot * a
        shift, slope, k = total / count, dot * a * a / count, scale[c]
        for n in range(batch):
            grads, row, target = g[n, c], x[n, c], gx[n, c]
            for j in range(size):
                target[j] = (grads[j] - shift - (row[j] - m) * slope) * k


# ----------------------------------------------- the shifted layout of 2-d images
@njit(**_ELEMENTWISE)
def shifted_image(x, out, top, left, lo, hi):
    """Channels lo:hi of (N, C, H, W) images `x` into `out`, (C, P0, N, P1), zero-padded
    by `top` rows and `left` columns before (and the rest of P0, P1 after): the layout of
    `im2col.Shifted.image`, written in one pass with its padding."""
    batch, _, height, width = x.shape
    rows = out.shape[1]
    zero = out.dtype.type(0)
    for c in range(lo, hi):
        for p in range(rows):
            r = p - top
            for n in range(batch):
                target = out[c, p, n]
                if r < 0 or r >= height:
                    target[:] = zero
                    continue
                source, interior = x[n, c, r], target[left:left + width]
                target[:left] = zero
                for j in range(width):
                    interior[j] = source[j]
                target[left + width:] = zero


@njit(**_ELEMENTWISE)
def shifted_grid(y, out, lo, hi):
    """Channels lo:hi of (N, O, G0, G1) outputs (or their gradients) `y` into `out`,
    (O, G0, N, P1), zero in the columns past G1: `im2col.Shifted.grid` in one pass."""
    batch, _, rows, width = y.shape
    zero = out.dtype.type(0)
    for o in range(lo, hi):
        for p in range(rows):
            for n in range(batch):
                source, target = y[n, o, p], out[o, p, n]
                for j in range(width):
                    target[j] = source[j]
                target[width:] = zero


@njit(**_ELEMENTWISE)
def phase_images(x, out, top, left, lo, hi):
    """Channels lo:hi of (N, C, H, W) images `x` into `out`, (C, S0, S1, P0, N, P1), as
    the stride phases of the images zero-padded by `top` rows and `left` columns before:
    out[c, a, b, p, n, q] = padded[n, c, S0·p + a, S1·q + b], zero outside the images
    (the layout of `im2col.Shifted.phase_image`)."""
    batch, _, height, width = x.shape
    s0, s1, rows, cols = out.shape[1], out.shape[2], out.shape[3], out.shape[5]
    zero = out.dtype.type(0)
    for c in range(lo, hi):
        for a in range(s0):
            for b in range(s1):
                # the columns q whose S1·q + b - left lies in 0:width (no negative
                # operand of //, whose rounding would then matter)
                first = (left - b + s1 - 1) // s1 if left > b else 0
                end = (width - 1 + left - b) // s1 + 1 if width - 1 + left >= b else 0
                first = min(first, cols)
                end = max(first, min(end, cols))
                for p in range(rows):
                    r = s0 * p + a - top
                    for n in range(batch):
                        target = out[c, a, b, p, n]
                        if r < 0 or r >= height:
                            target[:] = zero
                            continue
                        source = x[n, c, r]
                        target[:first] = zero
                        for q in range(first, end):
                            target[q] = source[s1 * q + b - left]
                        target[end:] = zero


# ------------------------------------- 3x3 convolutions, a few padded images at a time
@njit(**_INLINE)
def _pass(x, item, part, local, top, left, padded, taps, grid, shifts):
    """Work item `item`'s pass: images n0:n1 = item·part onwards of `x` (N, C, H, W),
    padded to `padded` (P0, P1) by `top` rows and `left` columns into the flat buffer
    `local` with `shifted_image`; each tap's column shift (its offsets `taps`, (9, 2)) in
    them into `shifts`. Returns n0, n1, their (C, P0 · (n1 - n0) · P1) matrix and the span
    reaching their last output on `grid`: `im2col.Shifted`'s layout of those images alone."""
    channels = x.shape[1]
    n0 = item * part
    n1 = min(x.shape[0], n0 + part)
    b, row = n1 - n0, (n1 - n0) * padded[1]
    image = local[:channels * padded[0] * row].reshape((channels, padded[0], b, padded[1]))
    shifted_image(x[n0:n1], image, top, left, 0, channels)
    for t in range(9):
        shifts[t] = taps[t, 0] * row + taps[t, 1]
    span = (grid[0] - 1) * row + (b - 1) * padded[1] + grid[1]
    return n0, n1, image.reshape((channels, padded[0] * row)), span


@njit(**_ELEMENTWISE)
def conv_nine_taps_by_images(x, w, bias, taps, top, left, padded, part, local, acc, y, rows,
                             lo, hi):
    """`conv_nine_taps` of (N, C, H, W) images `x`, `part` images per work item (item i:
    images i·part onwards): each pass pads its images to `padded` (P0, P1), by `top` rows
    and `left` columns, into the flat buffer `local` (C · P0 · part · P1 entries) and
    convolves them there while they stay in cache. `taps` (9, 2) are the taps' row and
    column offsets in the padded images; the rest is as for `conv_nine_taps`, which gives
    each output the same value either way."""
    quads, grid = w.shape[0] // 4, (y.shape[2], y.shape[3])
    shifts = np.empty(9, np.int64)
    for item in range(lo, hi):
        n0, n1, image, span = _pass(x, item, part, local, top, left, padded, taps, grid,
                                    shifts)
        blocks = -(-span // (rows * padded[1]))
        conv_nine_taps(image, w, bias, shifts, acc, y[n0:n1], span, rows, 0, blocks * quads)


@njit(**_REDUCING)
def conv_nine_taps_weight_grad_by_images(x, g, taps, top, left, padded, part, local,
                                         local_grid, dw, chunk, lo, hi):
    """`conv_nine_taps_weight_grad` of images `x` (N, C, H, W) and output gradients `g`
    (N, O, G0, G1), `part` images per work item: item i pads its images into the flat
    `local` as `conv_nine_taps_by_images` does, copies their gradients into the flat
    `local_grid` (O · G0 · part · P1 entries) with `shifted_grid`, and sums their weight
    gradient into dw[i] ((items, O, C, 9), zeroed), which the caller adds up in order."""
    out_channels, grid = g.shape[1], (g.shape[2], g.shape[3])
    shifts = np.empty(9, np.int64)
    for item in range(lo, hi):
        n0, n1, image, span = _pass(x, item, part, local, top, left, padded, taps, grid,
                                    shifts)
        size = out_channels * grid[0] * (n1 - n0) * padded[1]
        grads = local_grid[:size].reshape((out_channels, grid[0], n1 - n0, padded[1]))
        shifted_grid(g[n0:n1], grads, 0, out_channels)
        conv_nine_taps_weight_grad(image, grads.reshape((out_channels, size // out_channels)),
                                   0, shifts, dw[item], span, chunk, 0, (out_channels + 1) // 2)


# ------------------------------------------- 3x3 convolutions of many channels: GEMM rows
@njit(**_INLINE)
def _pad_channels_last(x, n, top, left, local):
    """Image n of `x` (N, C, H, W) into the interior of `local` (P0, P1, C), `top` rows and
    `left` columns in, channels last: a row of every channel at a time, whose lines stay
    in L1."""
    channels, height, width = x.shape[1], x.shape[2], x.shape[3]
    for i in range(height):
        target = local[top + i, left:left + width]
        for c in range(channels):
            source = x[n, c, i]
            for j in range(width):
                target[j, c] = source[j]


@njit(**_INLINE)
def _tap_runs(rows, taps, stride, grid, local, base, add):
    """Each output position p = (i, j) of the `grid` against its taps in the padded image
    `local` (P0, P1, C): row base + p of `rows` holds tap t's C channels at t · C. With
    `add` they are added back at their places (the adjoint), else copied into the row."""
    channels = local.shape[2]
    for i in range(grid[0]):
        for j in range(grid[1]):
            row = rows[base + i * grid[1] + j]
            for t in range(taps.shape[0]):
                place = local[stride[0] * i + taps[t, 0], stride[1] * j + taps[t, 1]]
                run = row[t * channels:(t + 1) * channels]
                if add:
                    for c in range(channels):
                        place[c] += run[c]
                else:
                    for c in range(channels):
                        run[c] = place[c]


@njit(**_ELEMENTWISE)
def tap_rows(x, taps, top, left, stride, grid, local, rows, n0, n1):
    """The rows of a convolution's GEMM for images n0:n1 of `x` (N, C, H, W): row
    (n - n0) · G0 · G1 + p holds, for output position p = (i, j) of the `grid` (G0, G1),
    each tap's C channels in turn (tap t at offsets `taps[t]` from (stride[0] · i,
    stride[1] · j) in the padded image), zero where the tap falls on the padding, so that
    rows @ the weights laid out as (T · C, O) is the convolution. `local` (P0, P1, C)
    holds one image padded by `top` rows and `left` columns, channels last: its border is
    zero on entry and stays zero (only the interior is written)."""
    for n in range(n0, n1):
        _pad_channels_last(x, n, top, left, local)
        _tap_runs(rows, taps, stride, grid, local, (n - n0) * grid[0] * grid[1], False)


@njit(**_ELEMENTWISE)
def rows_to_image_grads(rows, taps, top, left, stride, grid, local, out, n0, n1):
    """The adjoint of `tap_rows`: each row's taps, (positions of images n0:n1, T · C),
    added back at their places in the padded image, whose interior goes to out[n0:n1]
    (N, C, H, W) (what falls on the padding is dropped). `local` (P0, P1, C) is one
    image's padded sums, channels last."""
    channels, height, width = out.shape[1], out.shape[2], out.shape[3]
    flat = local.reshape(-1)
    for n in range(n0, n1):
        for q in range(flat.shape[0]):
            flat[q] = 0
        _tap_runs(rows, taps, stride, grid, local, (n - n0) * grid[0] * grid[1], True)
        for i in range(height):
            source = local[top + i, left:left + width]
            for c in range(channels):
                target = out[n, c, i]
                for j in range(width):
                    target[j] = source[j, c]


_TILE = 16  # positions per tile of the row <-> image transposes below


@njit(**_ELEMENTWISE)
def rows_to_images(result, bias, n0, n1, out):
    """The GEMM's `result` (rows of images n0:n1, as `tap_rows` orders them, by O
    channels) into out[n0:n1] (N, O, L), plus `bias` (O,): a transpose per image, a tile
    of positions at a time."""
    out_channels, length = out.shape[1], out.shape[2]
    for n in range(n0, n1):
        base = (n - n0) * length
        for p0 in range(0, length, _TILE):
            tile = min(_TILE, length - p0)
            block = result[base + p0:base + p0 + tile]
            for o in range(out_channels):
                target, shift = out[n, o, p0:p0 + tile], bias[o]
                for q in range(tile):
                    target[q] = block[q, o] + shift


@njit(**_ELEMENTWISE)
def images_to_rows(y, n0, n1, rows):
    """y[n0:n1] (N, O, L) as the rows of `tap_rows`' order, (positions, O): the inverse
    of `rows_to_images` with a zero bias."""
    out_channels, length = y.shape[1], y.shape[2]
    for n in range(n0, n1):
        base = (n - n0) * length
        for p0 in range(0, length, _TILE):
            tile = min(_TILE, length - p0)
            block = rows[base + p0:base + p0 + tile]
            for o in range(out_channels):
                source = y[n, o, p0:p0 + tile]
                for q in range(tile):
                    block[q, o] = source[q]


# ------------------------------ 3x3 convolutions of many channels: Winograd F(2x2, 3x3)
# A tile is the 4x4 patch of the padded image under a 2x2 block of outputs (tiles overlap
# by two rows and columns). Its 16 transformed values B^T d B go to 16 matrices, tile by
# channel, that the caller multiplies by the 16 transformed weights (`ops.winograd`).
# Every loop over the channels here reads at most four arrays' rows and writes one: LLVM
# vectorises such a loop behind a check that the rows do not overlap, where a loop
# writing all 16 values at once needs more checks than it makes and stays scalar.
@njit(**_ELEMENTWISE)
def winograd_tiles(x, top, left, tiles, local, rows, v, n0, n1):
    """B^T d B of every tile of images n0:n1 of `x` (N, C, H, W) padded by `top` rows and
    `left` columns, into v (16, >= T, C): tile t = (n - n0) · tiles[0] · tiles[1] + row ·
    tiles[1] + column, its value (i, j) in v[4 i + j, t]. `local` (2 · tiles[0] + 2,
    2 · tiles[1] + 2, C) holds one image padded, channels last: its border is zero on
    entry and stays zero (only the interior is written); `rows` (4, local.shape[1], C)
    holds B^T d for one row of tiles."""
    channels = x.shape[1]
    tile_rows, columns = tiles
    for n in range(n0, n1):
        _pad_channels_last(x, n, top, left, local)
        base = (n - n0) * tile_rows * columns
        for ty in range(tile_rows):
            r = 2 * ty  # B^T d: padded rows r - r+2, r+1 + r+2, r+2 - r+1, r+1 - r+3
            for j in range(local.shape[1]):
                for c in range(channels):
                    rows[0, j, c] = local[r, j, c] - local[r + 2, j, c]
                for c in range(channels):
                    rows[1, j, c] = local[r + 1, j, c] + local[r + 2, j, c]
                for c in range(channels):
                    rows[2, j, c] = local[r + 2, j, c] - local[r + 1, j, c]
                for c in range(channels):
                    rows[3, j, c] = local[r + 1, j, c] - local[r + 3, j, c]
            for i in range(4):  # then times B: the same along each tile's columns
                for tx in range(columns):
                    t, s = base + ty * columns + tx, 2 * tx
                    for c in range(channels):
                        v[4 * i, t, c] = rows[i, s, c] - rows[i, s + 2, c]
                    for c in range(channels):
                        v[4 * i + 1, t, c] = rows[i, s + 1, c] + rows[i, s + 2, c]
                    for c in range(channels):
                        v[4 * i + 2, t, c] = rows[i, s + 2, c] - rows[i, s + 1, c]
                    for c in range(channels):
                        v[4 * i + 3, t, c] = rows[i, s + 1, c] - rows[i, s + 3, c]


@njit(**_ELEMENTWISE)
def winograd_outputs(m, tiles, bias, n0, n1, sums, rows, out):
    """A^T m A of every tile's 16 products m (16, >= T, O), in `winograd_tiles`' order,
    plus `bias` (O,): each tile's 2x2 outputs into out[n0:n1] (N, O, G0, G1), those past
    the grid's edge dropped. `sums` (2, 4, O) holds a tile's A^T m; `rows`
    (2, 2 · tiles[1], O) one row of tiles' outputs, channels last, written out a channel
    row at a time."""
    tile_rows, columns = tiles
    out_channels, height, width = out.shape[1], out.shape[2], out.shape[3]
    for n in range(n0, n1):
        base = (n - n0) * tile_rows * columns
        for ty in range(tile_rows):
            for tx in range(columns):
                t, s = base + ty * columns + tx, 2 * tx
                for j in range(4):  # A^T m: rows 0 + 1 + 2 and 1 - 2 - 3
                    for o in range(out_channels):
                        sums[0, j, o] = m[j, t, o] + m[4 + j, t, o] + m[8 + j, t, o]
                    for o in range(out_channels):
                        sums[1, j, o] = m[4 + j, t, o] - m[8 + j, t, o] - m[12 + j, t, o]
                for i in range(2):  # then the same along the columns
                    for o in range(out_channels):
                        rows[i, s, o] = sums[i, 0, o] + sums[i, 1, o] + sums[i, 2, o] + bias[o]
                    for o in range(out_channels):
                        rows[i, s + 1, o] = sums[i, 1, o] - sums[i, 2, o] - sums[i, 3, o] + \
                            bias[o]
            for r in range(min(2, height - 2 * ty)):
                for o in range(out_channels):
                    target = out[n, o, 2 * ty + r]
                    for j in range(width):
                        target[j] = rows[r, j, o]


@njit(**_ELEMENTWISE)
def winograd_grad_tiles(g, tiles, n0, n1, rows, dm):
    """A g A^T of every tile's 2x2 output gradients of g[n0:n1] (N, O, G0, G1), zero past
    the grid's edge, into dm (16, >= T, O) in `winograd_tiles`' order: the adjoint of
    `winograd_outputs`, which the weight gradient multiplies by the tiles. `rows`
    (2, 2 · tiles[1], O) holds one row of tiles' gradients, channels last."""
    tile_rows, columns = tiles
    out_channels, height, width = g.shape[1], g.shape[2], g.shape[3]
    for n in range(n0, n1):
        base = (n - n0) * tile_rows * columns
        for ty in range(tile_rows):
            valid = min(2, height - 2 * ty)
            for r in range(2):
                for o in range(out_channels):
                    target = rows[r, :, o]
                    if r < valid:
                        source = g[n, o, 2 * ty + r]
                        for j in range(width):
                            target[j] = source[j]
                    for j in range(width if r < valid else 0, 2 * columns):
                        target[j] = 0
            for tx in range(columns):
                t, s = base + ty * columns + tx, 2 * tx
                # A g: rows g0, g0 + g1, g0 - g1, -g1 of the 2x2 block; then the same along
                # its columns: (a, b) to a, a + b, a - b, -b
                for o in range(out_channels):
                    dm[0, t, o] = rows[0, s, o]
                for o in range(out_channels):
                    dm[1, t, o] = rows[0, s, o] + rows[0, s + 1, o]
                for o in range(out_channels):
                    dm[2, t, o] = rows[0, s, o] - rows[0, s + 1, o]
                for o in range(out_channels):
                    dm[3, t, o] = -rows[0, s + 1, o]
                for o in range(out_channels):
                    dm[4, t, o] = rows[0, s, o] + rows[1, s, o]
                for o in range(out_channels):
                    dm[5, t, o] = rows[0, s, o] + rows[1, s, o] + rows[0, s + 1, o] + \
                        rows[1, s + 1, o]
                for o in range(out_channels):
                    dm[6, t, o] = rows[0, s, o] + rows[1, s, o] - rows[0, s + 1, o] - \
                        rows[1, s + 1, o]
                for o in range(out_channels):
                    dm[7, t, o] = -rows[0, s + 1, o] - rows[1, s + 1, o]
                for o in range(out_channels):
                    dm[8, t, o] = rows[0, s, o] - rows[1, s, o]
                for o in range(out_channels):
                    dm[9, t, o] = rows[0, s, o] - rows[1, s, o] + rows[0, s + 1, o] - \
                        rows[1, s + 1, o]
                for o in range(out_channels):
                    dm[10, t, o] = rows[0, s, o] - rows[1, s, o] - rows[0, s + 1, o] + \
                        rows[1, s + 1, o]
                for o in range(out_channels):
                    dm[11, t, o] = rows[1, s + 1, o] - rows[0, s + 1, o]
                for o in range(out_channels):
                    dm[12, t, o] = -rows[1, s, o]
                for o in range(out_channels):
                    dm[13, t, o] = -rows[1, s, o] - rows[1, s + 1, o]
                for o in range(out_channels):
                    dm[14, t, o] = rows[1, s + 1, o] - rows[1, s, o]
                for o in range(out_channels):
                    dm[15, t, o] = rows[1, s + 1, o]
