"""batch_norm in training on the CPU works per block of channels, the blocks shared out
among the intra-op threads: the output, the running statistics and every gradient are
bit for bit the same on one, two or three threads (each channel is computed whole by one
thread), and match torch, for 1-d to 3-d inputs, with and without affine parameters, on
the NumPy block kernels and on numba's loops (`kernel_path`)."""

from __future__ import annotations

import dlfree as dl
from dlfree import threads

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.usefixtures("kernel_path")

SHAPES = [(6, 5), (4, 7, 9), (3, 5, 4, 6), (2, 3, 2, 3, 4)]


def _run(module, x, affine, g):
    """batch_norm (training, running statistics updated) and the gradients, in `module`:
    [output, running mean, running var, grad x, (grad weight, grad bias)]."""
    tensor = dl.tensor if module is dl else torch.tensor
    c = x.shape[1]
    inputs = [tensor(x, requires_grad=True)]
    if affine:
        rng = np.random.default_rng(1)
        inputs += [tensor((1 + rng.standard_normal(c) * 0.1).astype(x.dtype), requires_grad=True),
                   tensor((rng.standard_normal(c) * 0.1).astype(x.dtype), requires_grad=True)]
    stats = [tensor(np.zeros(c, x.dtype)), tensor(np.ones(c, x.dtype))]
    fn = dl.functional.batch_norm if module is dl else torch.nn.functional.batch_norm
    out = fn(inputs[0], *stats, *(inputs[1:] if affine else (None, None)), training=True)
    out.backward(tensor(g))
    as_np = (lambda t: t.numpy()) if module is dl else (lambda t: t.detach().numpy())
    return [as_np(out.detach())] + [as_np(s) for s in stats] + [as_np(t.grad) for t in inputs]


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_channel_blocks_on_any_thread_count_match_torch(shape, affine, monkeypatch):
    monkeypatch.setattr(threads, "_THREADED_BYTES", 0)  # threads for these small arrays too
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape) * 2 + 0.5
    g = rng.standard_normal(shape)
    before = dl.get_num_threads()
    runs = []
    try:
        for count in (1, 2, 3):
            dl.set_num_threads(count)
            runs.append(_run(dl, x, affine, g))
    finally:
        dl.set_num_threads(before)
    for other in runs[1:]:
        for mine, one in zip(other, runs[0], strict=True):
            np.testing.assert_array_equal(mine, one)
    for mine, theirs in zip(runs[0], _run(torch, x, affine, g), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_large_float32_batch_norm_takes_the_threaded_path_and_matches_torch():
    """(8, 16, 48, 48) float32 is over the threading size as it stands."""
    shape = (8, 16, 48, 48)
    assert np.prod(shape) * 4 >= threads._THREADED_BYTES
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)
    ours, theirs = _run(dl, x, True, g), _run(torch, x, True, g)
    for mine, ref in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, ref, rtol=1e-4, atol=2e-5)
