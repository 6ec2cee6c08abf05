"""The recurrence behind the RNN layers (dlfree-nn's RNN, LSTM, GRU and their cells): one
layer in one direction over a whole sequence, as one Function whose time loop runs on arrays.

The layers keep their weights and arguments; this op is their compute, in the core with the
other ops so that it follows the ops' contract (autocast policy, profiling, devices).
"""

from __future__ import annotations

from typing import NamedTuple

from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..tensor import Tensor
from .elementwise import relu, sigmoid, tanh
from .gru_kernel import gru_backward, gru_forward
from .lstm_kernel import lstm_backward, lstm_forward
from .shape import cat, stack

__all__ = ["recurrence"]

class _ArrayMath:
    """The few functions the recurrence needs beyond operators, on backend arrays."""

    def __init__(self, xp):
        self.xp = xp

    def sigmoid(self, a):
        # the tanh form cannot overflow for any sign of a, unlike 1 / (1 + exp(-a))
        return self.xp.tanh(a * 0.5) * 0.5 + 0.5

    def tanh(self, a):
        return self.xp.tanh(a)

    def relu(self, a):
        return self.xp.maximum(a, 0)

    def positive(self, a):
        return (a > 0).astype(a.dtype)

    def cat(self, parts):
        return self.xp.concatenate(parts, axis=-1)

    def stack(self, parts):
        return self.xp.stack(parts)


class _TensorMath:
    """The same functions on Tensors, so that a replayed recurrence is recorded in the graph."""

    sigmoid = staticmethod(sigmoid)
    tanh = staticmethod(tanh)
    relu = staticmethod(relu)
    stack = staticmethod(stack)

    @staticmethod
    def positive(a):
        return (a > 0).to(a.dtype)

    @staticmethod
    def cat(parts):
        return cat(parts, -1)


class _Weights(NamedTuple):
    hh: object  # (G, P): the hidden-to-gates weight
    b_hh: object  # (G,) or None
    hr: object  # (P, H) or None: the LSTM's projection of its output


# Each step takes the input's share xs[t] (B, G), the hidden share h W_hhᵀ + b_hh (B, G) and
# the state before the step; it returns the new hidden state, cell state (LSTM) and what its
# backward needs. The backward steps take the gradients reaching the new h (and c) and return
# the gradients of the input's share, of the hidden share, the part of the previous h's
# gradient that bypasses W_hh (GRU), and the previous c's gradient (LSTM).
def _tanh_step(m, x, hp, h, c, hr):
    return m.tanh(x + hp), None, None


def _relu_step(m, x, hp, h, c, hr):
    return m.relu(x + hp), None, None


def _lstm_step(m, x, hp, h, c, hr):
    a = x + hp
    n = c.shape[-1]
    i, f, o = m.sigmoid(a[:, :n]), m.sigmoid(a[:, n:2 * n]), m.sigmoid(a[:, 3 * n:])
    g = m.tanh(a[:, 2 * n:3 * n])
    c = f * c + i * g
    tc = m.tanh(c)
    out = o * tc
    return (out if hr is None else out @ hr.T), c, (i, f, g, o, tc, out)


def _gru_step(m, x, hp, h, c, hr):
    n = h.shape[-1]
    r = m.sigmoid(x[:, :n] + hp[:, :n])
    z = m.sigmoid(x[:, n:2 * n] + hp[:, n:2 * n])
    hn = hp[:, 2 * n:]
    new = m.tanh(x[:, 2 * n:] + r * hn)
    return new + z * (h - new), None, (r, z, new, hn)


def _tanh_back(m, dh, dc, h, h_prev, c_prev, record, hr):
    da = dh * (1 - h * h)
    return da, da, None, None


def _relu_back(m, dh, dc, h, h_prev, c_prev, record, hr):
    da = dh * m.positive(h)
    return da, da, None, None


def _lstm_back(m, dh, dc, h, h_prev, c_prev, record, hr):
    i, f, g, o, tc, out = record
    dout = dh if hr is None else dh @ hr
    dc = dout * o * (1 - tc * tc) + dc
    da = m.cat([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                dout * tc * o * (1 - o)])
    return da, da, None, dc * f


def _gru_back(m, dh, dc, h, h_prev, c_prev, record, hr):
    r, z, new, hn = record
    dn = dh * (1 - z) * (1 - new * new)
    dr = dn * hn * r * (1 - r)
    dz = dh * (h_prev - new) * z * (1 - z)
    return m.cat([dr, dz, dn]), m.cat([dr, dz, dn * r]), dh * z, None


_STEPS = {"RNN_TANH": (_tanh_step, _tanh_back), "RNN_RELU": (_relu_step, _relu_back),
          "LSTM": (_lstm_step, _lstm_back), "GRU": (_gru_step, _gru_back)}


def _order(length: int, reverse: bool) -> list:
    """The time index of each step, in the order the steps run."""
    return list(range(length - 1, -1, -1)) if reverse else list(range(length))


def _run(m, mode: str, xs, h0, c0, w: _Weights, reverse: bool) -> tuple:
    """The recurrence over xs (T, B, G) from (h0, c0): every step's h, c and record, in the
    order the steps ran. One GEMM per step; the rest is element-wise."""
    step = _STEPS[mode][0]
    h, c = h0, c0
    hs, cs, records = [], [], []
    for t in _order(xs.shape[0], reverse):
        hp = h @ w.hh.T
        if w.b_hh is not None:
            hp = hp + w.b_hh
        h, c, record = step(m, xs[t], hp, h, c, w.hr)
        hs.append(h)
        cs.append(c)
        records.append(record)
    return hs, cs, records


def _flat(m, parts):
    """Per-step (B, k) values stacked and flattened to (steps * B, k), for one weight GEMM."""
    stacked = m.stack(parts)
    return stacked.reshape(-1, stacked.shape[-1])


def _backprop(m, mode: str, g_h, g_c, run: tuple, h0, c0, w: _Weights, reverse: bool) -> tuple:
    """Backpropagation through time. `g_h` and `g_c` are the gradients reaching each time
    step's h and c from outside (indexed by time). Returns the gradients of xs, W_hh, h0, c0,
    b_hh and W_hr; the weights' are one GEMM over all steps."""
    back = _STEPS[mode][1]
    hs, cs, records = run
    order = _order(len(hs), reverse)
    dxs, dhps, dh_steps = [None] * len(hs), [None] * len(hs), [None] * len(hs)
    dh = dc = None
    for k in range(len(hs) - 1, -1, -1):
        t = order[k]
        dh = g_h[t] if dh is None else g_h[t] + dh
        if g_c is not None:
            dc = g_c[t] if dc is None else g_c[t] + dc
        dh_steps[k] = dh
        dx, dhp, bypass, dc = back(m, dh, dc, hs[k], hs[k - 1] if k else h0,
                                   cs[k - 1] if k else c0, records[k], w.hr)
        dh = dhp @ w.hh if bypass is None else dhp @ w.hh + bypass
        dxs[t], dhps[k] = dx, dhp
    dhp_all = _flat(m, dhps)
    d_hh = dhp_all.T @ _flat(m, [h0] + hs[:-1])
    d_b_hh = None if w.b_hh is None else dhp_all.sum(0)
    d_hr = None if w.hr is None else \
        _flat(m, dh_steps).T @ _flat(m, [record[-1] for record in records])
    return m.stack(dxs), d_hh, dh, dc, d_b_hh, d_hr


class Recurrence(Function):
    """One layer in one direction over a whole sequence.

    Inputs: the input's share of the gates for every step, xs (T, B, G) = x W_ihᵀ + b_ih,
    made outside by one GEMM over all steps; W_hh (G, P); h0 (B, P); then c0 (B, H) for an
    LSTM, b_hh (G,) when `bias`, and W_hr (P, H) when an LSTM projects. The output is every
    step's h (T, B, P), followed for an LSTM by every step's c along the last dim
    (T, B, P + H). The time loop runs on arrays: per step one GEMM, h W_hhᵀ, and the gate
    arithmetic; backward runs it in reverse and builds each weight gradient with one GEMM
    over all steps. Under create_graph the loop is replayed and differentiated with Tensor
    ops instead, so the gradients are themselves differentiable. Under autocast it computes
    in float16, as torch's RNN cells and cuDNN's RNN do. An LSTM without projection and a
    GRU run ops/lstm_kernel.py's and ops/gru_kernel.py's loops instead, which write into
    buffers made once per sequence.
    """

    autocast = "lower"

    def forward(self, xs, w_hh, h0, *rest, mode, bias, proj, reverse):
        self.saves = tuple(range(3 + len(rest)))
        self.mode, self.bias, self.proj, self.reverse = mode, bias, proj, reverse
        c0, weights = self._unpack(w_hh, rest)
        if mode in ("LSTM", "GRU") and weights.hr is None:
            if mode == "LSTM":
                out, *kept = lstm_forward(self.xp, xs, h0, c0, w_hh, weights.b_hh, reverse)
            else:
                out, *kept = gru_forward(self.xp, xs, h0, w_hh, weights.b_hh, reverse)
            if self.needs_input_grad:
                # backward reads every step's h (and c) from the output: keep it,
                # version-checked
                self.save_output = True
                self.kernel = kept
            return out
        m = _ArrayMath(self.xp)
        run = _run(m, mode, xs, h0, c0, weights, reverse)
        if self.needs_input_grad:
            self.run = run
        hs, cs, _ = run
        if reverse:  # back in time order
            hs, cs = hs[::-1], cs[::-1]
        if c0 is None:
            return m.stack(hs)
        return m.cat([m.stack(hs), m.stack(cs)])

    def _unpack(self, w_hh, rest) -> tuple:
        rest = list(rest)
        c0 = rest.pop(0) if self.mode == "LSTM" else None
        b_hh = rest.pop(0) if self.bias else None
        return c0, _Weights(w_hh, b_hh, rest.pop(0) if self.proj else None)

    def backward(self, g):
        xs, w_hh, h0, *rest = self.saved_tensors
        output = rest.pop() if self.save_output else None
        c0, weights = self._unpack(w_hh, rest)
        width = h0.shape[-1]
        if output is not None and not STATE.enabled:
            if self.mode == "LSTM":
                grads = lstm_backward(self.xp, g._data, output._data, *self.kernel, h0._data,
                                      c0._data, w_hh._data, self.bias, self.reverse)
            else:
                d_xs, d_hh, d_h0, d_b_hh = gru_backward(
                    self.xp, g._data, output._data, *self.kernel, h0._data, w_hh._data,
                    self.bias, self.reverse)
                grads = d_xs, d_hh, d_h0, None, d_b_hh
            grads = tuple(None if a is None else Tensor._make(a, self.device)
                          for a in grads) + (None,)  # no projection
        elif STATE.enabled:
            run = _run(_TensorMath, self.mode, xs, h0, c0, weights, self.reverse)
            grads = _backprop(_TensorMath, self.mode, g[..., :width],
                              None if c0 is None else g[..., width:], run, h0, c0, weights,
                              self.reverse)
        else:
            g = g._data
            arrays = _Weights(*(None if a is None else a._data for a in weights))
            grads = _backprop(_ArrayMath(self.xp), self.mode, g[..., :width],
                              None if c0 is None else g[..., width:], self.run, h0._data,
                              None if c0 is None else c0._data, arrays, self.reverse)
            grads = tuple(None if a is None else Tensor._make(a, self.device) for a in grads)
        d_xs, d_hh, d_h0, d_c0, d_b_hh, d_hr = grads
        out = [d_xs, d_hh, d_h0] + ([d_c0] if c0 is not None else []) + \
            ([d_b_hh] if self.bias else []) + ([d_hr] if self.proj else [])
        return tuple(grad if need else None for grad, need in zip(out, self.needs_input_grad))


def recurrence(mode: str, xs, h0, c0, w_hh, b_hh, w_hr, reverse: bool):
    """Run one layer-direction of `mode` ("RNN_TANH", "RNN_RELU", "LSTM" or "GRU"); returns
    the output (see `Recurrence`). c0 is an LSTM's, b_hh and w_hr None when absent."""
    extras = [t for t in (c0, b_hh, w_hr) if t is not None]
    return Recurrence.apply(xs, w_hh, h0, *extras, mode=mode, bias=b_hh is not None,
                             proj=w_hr is not None, reverse=reverse)
