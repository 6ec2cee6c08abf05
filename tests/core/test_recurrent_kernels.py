"""The buffered time loops of the LSTM (ops/lstm_kernel.py) and the GRU (ops/gru_kernel.py):
each agrees with the generic step-by-step recurrence it replaces, its gradients pass a
float64 finite-difference check in both directions with and without a hidden bias, and a
change to its output, which its backward reads, is caught."""

import dlfree as dl
from dlfree.autograd.gradcheck import gradcheck
from dlfree.errors import AutogradError
from dlfree.ops import recurrent
from dlfree.ops.recurrent import recurrence

import numpy as np
import pytest

T, B, H = 5, 3, 4
GATES = {"LSTM": 4, "GRU": 3}


def _inputs(mode, dtype=np.float64, seed=0):
    """xs, h0, c0 (None for a GRU), W_hh and b_hh of one layer-direction."""
    rng = np.random.default_rng(seed)
    g = GATES[mode] * H
    shapes = ((T, B, g), (B, H), (B, H) if mode == "LSTM" else None, (g, H), (g,))
    return [None if shape is None else
            dl.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
            for shape in shapes]


def _kernel_forward(mode, xs, h0, c0, w_hh, b_hh, reverse):
    if mode == "LSTM":
        return recurrent.lstm_forward(np, xs, h0, c0, w_hh, b_hh, reverse)[0]
    return recurrent.gru_forward(np, xs, h0, w_hh, b_hh, reverse)[0]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_forward_matches_the_generic_recurrence(mode, reverse):
    xs, h0, c0, w_hh, b_hh = (None if t is None else t.detach().numpy()
                              for t in _inputs(mode, np.float32))
    out = _kernel_forward(mode, xs, h0, c0, w_hh, b_hh, reverse)
    weights = recurrent._Weights(w_hh, b_hh, None)
    hs, cs, _ = recurrent._run(recurrent._ArrayMath(np), mode, xs, h0, c0, weights, reverse)
    if reverse:
        hs, cs = hs[::-1], cs[::-1]
    want = np.stack(hs) if c0 is None else np.concatenate([np.stack(hs), np.stack(cs)], -1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_gradients_pass_gradcheck(mode, reverse, bias):
    xs, h0, c0, w_hh, b_hh = _inputs(mode)

    def fn(xs, h0, w_hh, *rest):
        rest = list(rest)
        c = rest.pop(0) if mode == "LSTM" else None
        return recurrence(mode, xs, h0, c, w_hh, rest[0] if rest else None, None, reverse)

    args = [xs, h0, w_hh] + ([c0] if c0 is not None else []) + ([b_hh] if bias else [])
    assert gradcheck(fn, args)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_the_kernel_backward_matches_the_generic_one(mode):
    """The kernel's array backward and the replayed differentiable loop (create_graph) give
    the same gradients."""
    inputs = _inputs(mode)
    args = [t for t in inputs if t is not None]

    def grads(create_graph):
        out = recurrence(mode, *inputs, None, False)
        weight = dl.tensor(np.random.default_rng(1).standard_normal(out.shape))
        return dl.autograd.grad((out * weight).sum(), args, create_graph=create_graph)

    for fast, replayed in zip(grads(False), grads(True), strict=True):
        np.testing.assert_allclose(fast.numpy(), replayed.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_changing_the_output_in_place_is_caught(mode):
    out = recurrence(mode, *_inputs(mode), None, False)
    out.mul_(2)
    with pytest.raises(AutogradError, match="modified by an in-place operation"):
        out.sum().backward()


@pytest.mark.parametrize("reverse", [False, True])
def test_compiled_backward_step_matches_the_numpy_one(reverse):
    """numba's LSTM backward step (float32) against the NumPy ufuncs it replaces, over a
    whole sequence from a nonzero c0: within float32 rounding of each other."""
    pytest.importorskip("numba", reason="numba is not installed (pip install dlfree[numba])")
    from dlfree.backends import numba_kernels

    xs, h0, c0, w_hh, b_hh = (t.detach().numpy() for t in _inputs("LSTM", np.float32, seed=3))
    out, gates, tanh_c = recurrent.lstm_forward(np, xs, h0, c0, w_hh, b_hh, reverse)
    grad = np.random.default_rng(4).standard_normal(out.shape).astype(np.float32)
    results = []
    try:
        for compiled in (False, True):
            numba_kernels.set_enabled(compiled)
            results.append(recurrent.lstm_backward(np, grad, out, gates, tanh_c, h0, c0, w_hh,
                                                   True, reverse))
    finally:
        numba_kernels.set_enabled(None)
    for numpy_grad, compiled_grad in zip(*results, strict=True):
        assert compiled_grad.dtype == np.float32
        np.testing.assert_allclose(compiled_grad, numpy_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_compiled_forward_step_matches_the_numpy_one(reverse, bias):
    """numba's LSTM forward step (float32, its own sigmoid and tanh) against the NumPy
    ufuncs it replaces, over a whole sequence from a nonzero c0: every h, c, gate and
    tanh(c) within float32 rounding of each other (a few ulp per activation)."""
    pytest.importorskip("numba", reason="numba is not installed (pip install dlfree[numba])")
    from dlfree.backends import numba_kernels

    xs, h0, c0, w_hh, b_hh = (t.detach().numpy() for t in _inputs("LSTM", np.float32, seed=5))
    xs = xs * np.float32(3)  # pre-activations over the activations' whole range
    results = []
    try:
        for compiled in (False, True):
            numba_kernels.set_enabled(compiled)
            results.append(recurrent.lstm_forward(np, xs, h0, c0, w_hh, b_hh if bias else None,
                                                  reverse))
    finally:
        numba_kernels.set_enabled(None)
    for numpy_part, compiled_part in zip(*results, strict=True):
        assert compiled_part.dtype == np.float32
        np.testing.assert_allclose(compiled_part, numpy_part, rtol=2e-6, atol=2e-7)


def _compiled_activation(name):
    """The numba loop's scalar sigmoid or tanh, over a float32 array."""
    numba = pytest.importorskip("numba", reason="numba is not installed")
    from dlfree.backends import _numba_loops

    scalar = getattr(_numba_loops, name)

    @numba.njit
    def apply(z, out):
        for i in range(z.size):
            out[i] = scalar(z[i])

    def run(z):
        out = np.empty_like(z)
        apply(z, out)
        return out
    return run


@pytest.mark.parametrize("name, exact, ulps", [
    ("_sigmoid", lambda z: 1 / (1 + np.exp(-z)), 2.5),
    ("_tanh", np.tanh, 3.0),
])
def test_compiled_activations_are_within_a_few_ulp(name, exact, ulps):
    """Against float64 over [-20, 20] (densely near 0, where tanh switches forms at
    0.625), in ulps of the float32 result; and their edge values."""
    run = _compiled_activation(name)
    z = np.concatenate([np.linspace(-20, 20, 400_001), np.linspace(-1, 1, 400_001),
                        np.geomspace(1e-30, 1, 2001)]).astype(np.float32)
    want = exact(z.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(run(z) - want) / ulp) <= ulps
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -100.0], np.float32)
    got, ref = run(edges), exact(edges.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-37)
    np.testing.assert_array_equal(np.signbit(got[:2]), np.signbit(ref[:2]))
