"""The GRU's time loop on backend arrays with its buffers made once per sequence, as
ops/lstm_kernel.py does for the LSTM.

`Recurrence` (ops/recurrent.py) runs a GRU here when it needs no differentiable backward:
forward writes every step's gates (r, z, n), the hidden share of the candidate (h W_hnᵀ +
b_hn, which r scales) and h into preallocated (T, B, ·) arrays with in-place ufuncs;
backward through time writes every step's gradients of the input's and the hidden's share
of the gates into two (T, B, 3H) arrays, so neither direction allocates per step, and the
weights' gradients are one GEMM over all steps.
"""

from __future__ import annotations

from .lstm_kernel import _order, _sigmoid_, hidden_weight_grads


def gru_forward(xp, xs, h0, w_hh, b_hh, reverse: bool) -> tuple:
    """Run the GRU over xs (T, B, 3H), the input's share of the gates in torch's order
    (r, z, n), from h0 (B, H). Returns out (T, B, H), every step's h in time order, and what
    `gru_backward` needs: the activated gates (T, B, 3H) and the candidate's hidden share
    (T, B, H)."""
    steps, batch, width = xs.shape
    n = width // 3
    out = xp.empty((steps, batch, n), dtype=xs.dtype)
    gates = xp.empty((steps, batch, width), dtype=xs.dtype)
    hidden_n = xp.empty((steps, batch, n), dtype=xs.dtype)
    hp = xp.empty((batch, width), dtype=xs.dtype)
    w_t = xp.ascontiguousarray(w_hh.T)  # BLAS runs h @ W faster with W laid out as read
    h = h0
    for t in _order(steps, reverse):
        xp.matmul(h, w_t, out=hp)
        if b_hh is not None:
            hp += b_hh
        a, x = gates[t], xs[t]
        rz = a[:, :2 * n]
        xp.add(x[:, :2 * n], hp[:, :2 * n], out=rz)
        _sigmoid_(xp, rz)
        hn, candidate = hidden_n[t], a[:, 2 * n:]
        hn[...] = hp[:, 2 * n:]
        xp.multiply(a[:, :n], hn, out=candidate)
        candidate += x[:, 2 * n:]
        xp.tanh(candidate, out=candidate)
        # h' = n + z (h - n)
        h_new = out[t]
        xp.subtract(h, candidate, out=h_new)
        h_new *= a[:, n:2 * n]
        h_new += candidate
        h = h_new
    return out, gates, hidden_n


def gru_backward(xp, grad, out, gates, hidden_n, h0, w_hh, bias: bool, reverse: bool) -> tuple:
    """Backpropagation through time of `gru_forward`. `grad` (T, B, H) is the gradient of
    its output. Returns the gradients of xs, W_hh, h0 and b_hh (None without bias)."""
    steps, batch, width = gates.shape
    n = width // 3
    d_xs = xp.empty_like(gates)
    d_hp = xp.empty_like(gates)
    dh = xp.zeros((batch, n), dtype=gates.dtype)
    s = xp.empty((batch, n), dtype=gates.dtype)
    order = list(_order(steps, reverse))
    for k in range(steps - 1, -1, -1):
        t = order[k]
        h_prev = out[order[k - 1]] if k else h0
        r, z, cand = gates[t, :, :n], gates[t, :, n:2 * n], gates[t, :, 2 * n:]
        dr, dz, dn = d_xs[t, :, :n], d_xs[t, :, n:2 * n], d_xs[t, :, 2 * n:]
        dh += grad[t]
        # dn = dh (1 - z) (1 - n^2)
        xp.multiply(cand, cand, out=dn)
        xp.subtract(1, dn, out=dn)
        xp.subtract(1, z, out=s)
        dn *= s
        dn *= dh
        # dr = dn hn r (1 - r)
        xp.subtract(1, r, out=dr)
        dr *= r
        dr *= hidden_n[t]
        dr *= dn
        # dz = dh (h_prev - n) z (1 - z)
        xp.subtract(1, z, out=dz)
        dz *= z
        xp.subtract(h_prev, cand, out=s)
        dz *= s
        dz *= dh
        # the hidden share's gradient: r and z as the input's, the candidate's times r
        d_hp[t, :, :2 * n] = d_xs[t, :, :2 * n]
        xp.multiply(dn, r, out=d_hp[t, :, 2 * n:])
        # the previous h: through z directly and through W_hh
        dh *= z
        xp.matmul(d_hp[t], w_hh, out=s)
        dh += s
    d_hh, d_b_hh = hidden_weight_grads(d_hp, h0, out, bias, reverse)
    return d_xs, d_hh, dh, d_b_hh
