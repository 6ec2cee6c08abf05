"""Dropout draws from dl's seeded generator, so it is checked by its statistics, its
reproducibility and the mask that backward reuses rather than against torch's numbers."""

from __future__ import annotations

import math

import dlfree as dl

import numpy as np
import pytest

F = dl.functional


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_keep_rate_and_scaling(p):
    dl.manual_seed(0)
    out = F.dropout(dl.ones(200, 500), p).numpy()
    kept = out != 0
    assert abs(kept.mean() - (1 - p)) < 0.005  # ~5 standard deviations at n = 100,000
    np.testing.assert_allclose(out[kept], 1 / (1 - p), rtol=1e-6)


@pytest.mark.parametrize("fn, shape, mask_shape", [
    (F.dropout1d, (40, 30, 7), (40, 30, 1)),
    (F.dropout1d, (30, 7), (30, 1)),
    (F.dropout2d, (20, 30, 3, 4), (20, 30, 1, 1)),
    (F.dropout3d, (10, 30, 2, 2, 3), (10, 30, 1, 1, 1)),
    (F.dropout3d, (30, 2, 2, 3), (30, 1, 1, 1)),
])
def test_feature_dropout_drops_whole_channels(fn, shape, mask_shape):
    dl.manual_seed(1)
    out = fn(dl.ones(*shape), 0.4).numpy()
    per_channel = out.reshape(math.prod(mask_shape), -1)  # the mask's dims lead
    assert np.all(per_channel.min(axis=1) == per_channel.max(axis=1))  # all or nothing
    assert abs((per_channel[:, 0] != 0).mean() - 0.6) < 0.1
    np.testing.assert_allclose(per_channel[per_channel != 0], 1 / 0.6, rtol=1e-6)


def test_dropout2d_takes_a_3d_input_as_batched_like_torch():
    with pytest.warns(UserWarning, match="3D input"):
        out = F.dropout2d(dl.ones(8, 16, 5), 0.5).numpy()
    assert np.all(out.min(axis=2) == out.max(axis=2))


def test_same_seed_same_mask_and_the_stream_moves_on():
    dl.manual_seed(7)
    a = F.dropout(dl.ones(50, 50), 0.5)
    b = F.dropout(dl.ones(50, 50), 0.5)
    dl.manual_seed(7)
    again = F.dropout(dl.ones(50, 50), 0.5)
    np.testing.assert_array_equal(a.numpy(), again.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("fn", [F.dropout, F.dropout2d, F.alpha_dropout,
                                F.feature_alpha_dropout])
def test_eval_mode_and_p_zero_return_the_input_itself(fn):
    x = dl.randn(4, 3, 2, 2)
    assert fn(x, 0.5, training=False) is x
    assert fn(x, 0.0, training=True) is x


def test_p_one_drops_everything():
    x = dl.randn(5, 4, requires_grad=True)
    out = F.dropout(x, 1.0)
    out.sum().backward()
    assert not np.any(out.detach().numpy()) and not np.any(x.grad.numpy())


SELU_NEGATIVE = 1.7580993408473766  # -selu(-inf), where alpha dropout sends dropped values


def alpha_scale(p):
    return 1 / math.sqrt((SELU_NEGATIVE ** 2 * p + 1) * (1 - p))


@pytest.mark.parametrize("fn", [F.dropout, F.dropout1d, F.alpha_dropout])
def test_backward_reuses_the_forward_mask(fn):
    p = 0.3
    dl.manual_seed(3)
    x = dl.randn(6, 5, 4, requires_grad=True)
    out = fn(x, p, training=True)
    g = dl.randn(6, 5, 4)
    out.backward(g)
    x_np, out_np = x.detach().numpy(), out.detach().numpy()
    if fn is F.alpha_dropout:  # kept entries are a * x + shift, read back from the output
        a = alpha_scale(p)
        kept, factor = np.isclose(out_np, a * x_np + SELU_NEGATIVE * a * p, 1e-5, 1e-6), a
    else:
        kept, factor = out_np != 0, 1 / (1 - p)
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(x.grad.numpy(), g.numpy() * kept * factor, rtol=1e-6,
                               atol=1e-7)


def test_double_backward_through_dropout_keeps_the_mask():
    dl.manual_seed(4)
    x = dl.randn(30, requires_grad=True)
    out = F.dropout(x, 0.5)
    (g,) = dl.autograd.grad((out * out).sum(), x, create_graph=True)
    (gg,) = dl.autograd.grad(g.sum(), x)
    kept = out.detach().numpy() != 0
    np.testing.assert_allclose(gg.numpy(), 2 * kept * 4.0, rtol=1e-6)


def test_alpha_dropout_keeps_zero_mean_and_unit_variance():
    dl.manual_seed(5)
    out = F.alpha_dropout(dl.randn(400, 500), 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02


def test_inplace_dropout_writes_into_the_input():
    dl.manual_seed(6)
    x = dl.randn(10, 10, requires_grad=True)
    h = x * 1
    out = F.dropout(h, 0.5, inplace=True)
    assert out is h
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (h.detach().numpy() != 0) * 2.0)


@pytest.mark.parametrize("fn", [F.dropout, F.dropout2d, F.alpha_dropout])
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_p_outside_0_1_is_a_value_error(fn, p):
    with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but "
                                         f"got {p}"):
        fn(dl.randn(2, 3, 4, 4), p, training=True)


def test_dropout1d_needs_2d_or_3d_input():
    with pytest.raises(dl.ShapeError, match=r"dropout1d: expected a 2-d or 3-d input.*\(2, 3, 4, "
                                            r"5\)"):
        F.dropout1d(dl.randn(2, 3, 4, 5))
