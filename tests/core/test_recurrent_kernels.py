"""The LSTM's buffered time loop (ops/lstm_kernel.py): it agrees with the generic step-by-step
recurrence it replaces, its gradients pass a float64 finite-difference check in both
directions with and without a hidden bias, and a change to its output, which its backward
reads, is caught."""

import dlfree as dl
from dlfree.autograd.gradcheck import gradcheck
from dlfree.errors import AutogradError
from dlfree.ops import recurrent
from dlfree.ops.recurrent import recurrence

import numpy as np
import pytest

T, B, H = 5, 3, 4


def _inputs(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [dl.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
            for shape in ((T, B, 4 * H), (B, H), (B, H), (4 * H, H), (4 * H,))]


@pytest.mark.parametrize("reverse", [False, True])
def test_forward_matches_the_generic_recurrence(reverse):
    xs, h0, c0, w_hh, b_hh = (t.detach().numpy() for t in _inputs(np.float32))
    out, _, _ = recurrent.lstm_forward(np, xs, h0, c0, w_hh, b_hh, reverse)
    weights = recurrent._Weights(w_hh, b_hh, None)
    hs, cs, _ = recurrent._run(recurrent._ArrayMath(np), "LSTM", xs, h0, c0, weights, reverse)
    if reverse:
        hs, cs = hs[::-1], cs[::-1]
    np.testing.assert_allclose(out, np.concatenate([np.stack(hs), np.stack(cs)], -1),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_gradients_pass_gradcheck(reverse, bias):
    xs, h0, c0, w_hh, b_hh = _inputs()

    def fn(xs, h0, c0, w_hh, *b):
        return recurrence("LSTM", xs, h0, c0, w_hh, b[0] if b else None, None, reverse)

    assert gradcheck(fn, [xs, h0, c0, w_hh] + ([b_hh] if bias else []))


def test_changing_the_output_in_place_is_caught():
    xs, h0, c0, w_hh, b_hh = _inputs()
    out = recurrence("LSTM", xs, h0, c0, w_hh, b_hh, None, False)
    out.mul_(2)
    with pytest.raises(AutogradError, match="modified by an in-place operation"):
        out.sum().backward()
