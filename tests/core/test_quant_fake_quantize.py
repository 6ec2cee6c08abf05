"""Fake quantization forward and straight-through gradient against torch's, bit for bit."""

import dlfree as dl
from dlfree.quantization import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine

import numpy as np
import pytest
import torch


def _pair(x):
    return dl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("qrange", [(-128, 127), (0, 255), (-64, 63)])
@pytest.mark.parametrize("scale,zero_point", [(0.05, 0), (0.013, 7), (0.2, 30)])
def test_per_tensor_matches_torch(qrange, scale, zero_point):
    x = (np.random.default_rng(0).standard_normal((6, 5, 4)) * 12).astype(np.float32)
    ours, ref = _pair(x)
    y = fake_quantize_per_tensor_affine(ours, scale, zero_point, *qrange)
    yr = torch.fake_quantize_per_tensor_affine(ref, scale, zero_point, *qrange)
    gy = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    y.backward(dl.tensor(gy))
    yr.backward(torch.from_numpy(gy))
    np.testing.assert_array_equal(y.detach().numpy(), yr.detach().numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), ref.grad.numpy())
    assert (ours.grad.numpy() == 0).any() and (ours.grad.numpy() != 0).any()


@pytest.mark.parametrize("qrange", [(-128, 127), (0, 255)])
@pytest.mark.parametrize("axis", [0, 1, 3])
def test_per_channel_matches_torch(qrange, axis):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 4, 2, 5)) * 2).astype(np.float32)
    n = x.shape[axis]
    scale = rng.uniform(0.005, 0.05, n).astype(np.float32)
    zero_point = rng.integers(qrange[0] // 4 + 32, qrange[1] // 4, n)
    ours, ref = _pair(x)
    y = fake_quantize_per_channel_affine(ours, scale, zero_point, axis, *qrange)
    yr = torch.fake_quantize_per_channel_affine(
        ref, torch.from_numpy(scale), torch.from_numpy(zero_point).int(), axis, *qrange
    )
    y.sum().backward()
    yr.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), yr.detach().numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), ref.grad.numpy())


def test_fake_quantize_rejects_bad_arguments():
    x = dl.zeros(2, 3)
    with pytest.raises(ValueError, match="scale must be positive"):
        fake_quantize_per_tensor_affine(x, 0.0, 0, -128, 127)
    with pytest.raises(ValueError, match="quant_min must be below quant_max"):
        fake_quantize_per_tensor_affine(x, 0.1, 0, 127, -128)
    with pytest.raises(ValueError, match="zero_point must lie in"):
        fake_quantize_per_tensor_affine(x, 0.1, -1, 0, 255)
    with pytest.raises(dl.errors.ShapeError, match="need 3 values"):
        fake_quantize_per_channel_affine(x, [0.1, 0.1], [0, 0], 1, -128, 127)
