"""clip_grad_norm_ and clip_grad_value_ against torch.nn.utils."""

from __future__ import annotations

import dlfree as dl
import dlfree.optim as optim

import numpy as np
import pytest
import torch

SHAPES = [(3,), (4, 5), (2, 3, 4), ()]


def _pair(dtype=np.float64, scale=1.0, seed=0):
    """The same parameters with the same gradients, in dl.free and in torch."""
    rng = np.random.default_rng(seed)
    params, tparams = [], []
    for shape in SHAPES:
        grad = (scale * rng.standard_normal(shape)).astype(dtype)
        p = dl.Parameter(dl.tensor(np.zeros(shape, dtype)))
        t = torch.nn.Parameter(torch.tensor(np.zeros(shape, dtype)))
        p.grad, t.grad = dl.tensor(grad.copy()), torch.tensor(grad.copy())
        params.append(p)
        tparams.append(t)
    return params, tparams


@pytest.mark.parametrize("norm_type", [1, 2, 3.5, float("inf"), "inf", 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    params, tparams = _pair()
    total = optim.clip_grad_norm_(params, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type)
    assert isinstance(total, dl.Tensor) and total.ndim == 0 and total.dtype == dl.float64
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-12)
    for p, t in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    clipped = np.linalg.norm(np.concatenate([p.grad.numpy().ravel() for p in params]),
                             float(norm_type))
    assert clipped == pytest.approx(min(max_norm, total.item()), rel=1e-5)


def test_clip_grad_norm_float32_matches_torch():
    params, tparams = _pair(np.float32, scale=3.0)
    total = optim.clip_grad_norm_(params, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(tparams, 1.0)
    assert total.dtype == dl.float32
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    for p, t in zip(params, tparams):
        assert p.grad.dtype == dl.float32
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_clip_grad_norm_takes_one_tensor_and_skips_missing_grads():
    params, tparams = _pair()
    params[1].grad, tparams[1].grad = None, None
    total = optim.clip_grad_norm_(params[0], 0.1)
    expected = torch.nn.utils.clip_grad_norm_(tparams[0], 0.1)
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-12)
    total = optim.clip_grad_norm_(iter(params), 0.1)
    expected = torch.nn.utils.clip_grad_norm_(iter(tparams), 0.1)
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-12)
    assert params[1].grad is None
    assert optim.clip_grad_norm_([dl.Parameter(dl.zeros(2))], 1.0).item() == 0.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_error_if_nonfinite(bad):
    params, tparams = _pair()
    params[2].grad.array[0, 1, 2] = bad
    tparams[2].grad[0, 1, 2] = bad
    with pytest.raises(ValueError, match="total norm of order 2.0 .* is (nan|inf)"):
        optim.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    total = optim.clip_grad_norm_(params, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(tparams, 1.0)
    np.testing.assert_array_equal(total.item(), expected.item())
    for p, t in zip(params, tparams):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_norm=-1.0), "max_norm must be a number >= 0"),
    (dict(max_norm="big"), "max_norm must be a number >= 0"),
    (dict(max_norm=1.0, norm_type="two"), "norm_type must be a number"),
    (dict(max_norm=1.0, norm_type=None), "norm_type must be a number"),
])
def test_clip_grad_norm_bad_arguments(kwargs, message):
    params, _ = _pair()
    with pytest.raises(ValueError, match=message):
        optim.clip_grad_norm_(params, **kwargs)
    with pytest.raises(TypeError, match="parameter 1 is a str"):
        optim.clip_grad_norm_([params[0], "w"], 1.0)


@pytest.mark.parametrize("clip_value", [0.0, 0.3, 10.0])
def test_clip_grad_value_matches_torch(clip_value):
    params, tparams = _pair(scale=2.0)
    params[3].grad = tparams[3].grad = None
    assert optim.clip_grad_value_(params, clip_value) is None
    torch.nn.utils.clip_grad_value_(tparams, clip_value)
    for p, t in zip(params[:3], tparams[:3]):
        np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    assert params[3].grad is None
    with pytest.raises(ValueError, match="clip_value must be a number >= 0, got -1"):
        optim.clip_grad_value_(params, -1)
