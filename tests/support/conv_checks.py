"""Checks the convolution paths' tests share (tests/core/test_conv_*.py)."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import torch


def check_strided_input_and_broadcast_gradient() -> None:
    """A transposed view as a 3x3 convolution's input and the expanded gradient of sum()
    are read where they lie: float64 output and gradients equal torch's to 1e-12."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 7, 5)), rng.standard_normal((4, 3, 3, 3))
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w)]
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    out = dl.functional.conv2d(ours[0].transpose(2, 3), ours[1], padding=1)
    expected = torch.nn.functional.conv2d(ref[0].transpose(2, 3), ref[1], padding=1)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


def check_against_torch(x, w, kw: dict, out, grads) -> None:
    """A convolution's output `out` and the gradients `grads` (of x and w, for an output
    gradient of ones) equal torch's in float64, to 1e-4."""
    ref = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w)]
    expected = torch.nn.functional.conv2d(*ref, **kw)
    expected.backward(torch.ones_like(expected))
    for a, b in zip([out, *grads], [expected] + [t.grad for t in ref], strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)
