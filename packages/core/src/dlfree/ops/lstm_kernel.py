"""The LSTM's time loop on backend arrays with its buffers made once per sequence.

`Recurrence` (ops/recurrent.py) runs an LSTM without projection here when it needs no
differentiable backward: forward writes every step's gates, h and c straight into
preallocated (T, B, ·) arrays with in-place ufuncs, and backward through time writes every
step's gate gradient into one (T, B, 4H) array, so neither direction allocates per step
beyond what BLAS and the ufuncs need internally. The weights' gradients are then one GEMM
over all steps. In float32 on NumPy with numba installed, each step's gate arithmetic,
forward and backward, is one compiled loop (`backends.numba_kernels`) instead of 12 to 20
ufunc calls.
"""

from __future__ import annotations

import numpy

from ..backends import numba_kernels
from ..backends.openblas import gemm


def _sigmoid_(xp, a) -> None:
    """sigmoid(a) in place, in its tanh form, which cannot overflow for either sign."""
    xp.multiply(a, 0.5, out=a)
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


def _order(length: int, reverse: bool) -> range:
    return range(length - 1, -1, -1) if reverse else range(length)


def _cell(xp, a, x, b_hh, c_prev, h, c, tanh_c, scratch) -> None:
    """One step after its hidden product `a` (B, 4H): the gates activated in `a` from it,
    the input share `x` and `b_hh` (or None), then c, tanh(c) and h from c_prev."""
    n = c.shape[1]
    a += x
    if b_hh is not None:
        a += b_hh
    i, f, g, o = a[:, :n], a[:, n:2 * n], a[:, 2 * n:3 * n], a[:, 3 * n:]
    _sigmoid_(xp, a[:, :2 * n])
    xp.tanh(g, out=g)
    _sigmoid_(xp, o)
    xp.multiply(f, c_prev, out=c)
    xp.multiply(i, g, out=scratch)
    c += scratch
    xp.tanh(c, out=tanh_c)
    xp.multiply(o, tanh_c, out=h)


def lstm_forward(xp, xs, h0, c0, w_hh, b_hh, reverse: bool) -> tuple:
    """Run the LSTM over xs (T, B, 4H), the input's share of the gates, from h0 and c0
    (B, H). Returns out (T, B, 2H), every step's h then c along the last dim in time order,
    and what `lstm_backward` needs: the activated gates (T, B, 4H) in torch's order
    (i, f, g, o) and tanh(c) (T, B, H)."""
    steps, batch, width = xs.shape
    n = width // 4
    out = xp.empty((steps, batch, 2 * n), dtype=xs.dtype)
    gates = xp.empty((steps, batch, width), dtype=xs.dtype)
    tanh_c = xp.empty((steps, batch, n), dtype=xs.dtype)
    scratch = xp.empty((batch, n), dtype=xs.dtype)
    w_t = xp.ascontiguousarray(w_hh.T)  # BLAS runs h @ W faster with W laid out as read
    loops = numba_kernels.kernels_for(xp, "f", xs, h0, c0, w_hh, b_hh)  # float32 exp
    if loops is not None:  # every array as the loop reads it: C-contiguous, a zero bias
        xs, c_rows, offset = xp.ascontiguousarray(xs), xp.ascontiguousarray(c0), 0
        bias = xp.zeros(width, xs.dtype) if b_hh is None else xp.ascontiguousarray(b_hh)
    h, c = h0, c0
    for t in _order(steps, reverse):
        a = gates[t]
        xp.matmul(h, w_t, out=a)
        if loops is not None:
            loops.lstm_cell(a, xs[t], bias, c_rows, offset, out[t], tanh_c[t])
            c_rows, offset = out[t], n
        else:
            _cell(xp, a, xs[t], b_hh, c, out[t, :, :n], out[t, :, n:], tanh_c[t], scratch)
            c = out[t, :, n:]
        h = out[t, :, :n]
    return out, gates, tanh_c


def _cell_grads(xp, gates, tanh_c, c_prev, grad_h, grad_c, dh, dc, d_gates, s) -> None:
    """`numba_kernels`' `lstm_cell_grads` in NumPy ufuncs (`s` is (B, H) scratch)."""
    n = dc.shape[1]
    i, f, g, o = (gates[:, j * n:(j + 1) * n] for j in range(4))
    di, df, dg, do = (d_gates[:, j * n:(j + 1) * n] for j in range(4))
    dh += grad_h
    dc += grad_c
    # dc += dh * o * (1 - tanh(c)^2)
    xp.multiply(tanh_c, tanh_c, out=s)
    xp.subtract(1, s, out=s)
    s *= o
    s *= dh
    dc += s
    # d(o gate pre-activation) = dh * tanh(c) * o * (1 - o)
    xp.subtract(1, o, out=do)
    do *= o
    do *= tanh_c
    do *= dh
    # di = dc * g * i * (1 - i); df = dc * c_prev * f * (1 - f); dg = dc * i * (1 - g^2)
    xp.subtract(1, i, out=di)
    di *= i
    di *= g
    di *= dc
    xp.subtract(1, f, out=df)
    df *= f
    df *= c_prev
    df *= dc
    xp.multiply(g, g, out=dg)
    xp.subtract(1, dg, out=dg)
    dg *= i
    dg *= dc
    dc *= f


def lstm_backward(xp, grad, out, gates, tanh_c, h0, c0, w_hh, bias: bool,
                  reverse: bool) -> tuple:
    """Backpropagation through time of `lstm_forward`. `grad` (T, B, 2H) is the gradient
    of its output. Returns the gradients of xs, W_hh, h0, c0 and b_hh (None without bias)."""
    steps, batch, width = gates.shape
    n = width // 4
    d_gates = xp.empty_like(gates)
    dh = xp.zeros((batch, n), dtype=gates.dtype)
    dc = xp.zeros((batch, n), dtype=gates.dtype)
    s = xp.empty((batch, n), dtype=gates.dtype)
    order = list(_order(steps, reverse))
    loops = numba_kernels.kernels_for(xp, "f", grad, out, gates, h0, c0, w_hh)  # float32 exp
    if loops is not None:  # as the loop reads them: C-contiguous
        grad, c0_rows = xp.ascontiguousarray(grad), xp.ascontiguousarray(c0)
    for k in range(steps - 1, -1, -1):
        t = order[k]
        if loops is not None:
            rows, offset = (out[order[k - 1]], n) if k else (c0_rows, 0)
            loops.lstm_cell_grads(gates[t], tanh_c[t], rows, offset, grad[t], dh, dc,
                                  d_gates[t])
        else:
            c_prev = out[order[k - 1], :, n:] if k else c0
            _cell_grads(xp, gates[t], tanh_c[t], c_prev, grad[t, :, :n], grad[t, :, n:], dh,
                        dc, d_gates[t], s)
        xp.matmul(d_gates[t], w_hh, out=dh)
    d_hh, d_b_hh = hidden_weight_grads(d_gates, h0, out[:, :, :n], bias, reverse)
    return d_gates, d_hh, dh, dc, d_b_hh


def hidden_weight_grads(d_gates, h0, hs, bias: bool, reverse: bool) -> tuple:
    """The gradients of W_hh and b_hh (None without bias) from every step's gradient of
    the hidden share of the gates, d_gates (T, B, G), and every step's h, hs (T, B, H) in
    time order: one GEMM over all steps, each step's gradient against the h before it (h0
    for the first step that ran, the previous step's h after)."""
    steps, _, width = d_gates.shape
    ran_first, rest = (steps - 1, slice(None, -1)) if reverse else (0, slice(1, None))
    before = slice(1, None) if reverse else slice(None, -1)
    d_hh = d_gates[ran_first].T @ h0
    if steps > 1:
        grads = d_gates[rest].reshape(-1, width).T
        hidden = hs[before].reshape(-1, hs.shape[-1])
        if isinstance(d_hh, numpy.ndarray):  # BLAS adds the product in place: no temporary
            gemm(grads, hidden, d_hh, accumulate=True)
        else:
            d_hh += grads @ hidden
    return d_hh, d_gates.reshape(-1, width).sum(0) if bias else None
