"""layer_norm on the CPU works through blocks of rows: forward and every gradient match
torch when the rows split into several blocks with a short last one, for each affine and
requires-grad combination, for leading and normalized dims of any count, and when empty, on
one thread or two (the blocks shared out, the parameter gradients the same every run), with
the NumPy kernels and with numba's compiled loops."""

from __future__ import annotations

import importlib

import dlfree as dl

import numpy as np
import pytest
import torch

norm = importlib.import_module("dlfree.ops.norm")  # dlfree.ops.norm is also a function's name

# each test runs on the NumPy kernels and on numba's compiled loops (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("kernel_path")

# (input shape, normalized_shape, block size in elements): 2 rows a block over 7 rows,
# 1 row a block over 6, 3 rows a block over 10, one block
SPLITS = [((7, 5), (5,), 10), ((2, 3, 4, 6), (4, 6), 30), ((10, 3), (3,), 9), ((4, 8), (8,), 1000)]
# which of (input, weight, bias) exist / require grad: None means no such parameter
GRADS = [(True, None, None), (True, True, True), (False, True, True), (True, False, True),
         (True, True, None), (True, None, False), (False, None, True)]


def _run(module, x, shape, params, grads, g, eps):
    """layer_norm and the gradients of (x, weight, bias) that require grad, in `module`."""
    tensor = dl.tensor if module is dl else torch.tensor
    inputs = [tensor(a, requires_grad=r) if a is not None else None
              for a, r in zip([x, *params], grads)]
    norm_fn = dl.functional.layer_norm if module is dl else torch.nn.functional.layer_norm
    out = norm_fn(inputs[0], shape, inputs[1], inputs[2], eps)
    out.backward(tensor(g))
    grads_out = [t.grad for t in inputs if t is not None and t.requires_grad]
    as_np = (lambda t: t.numpy()) if module is dl else (lambda t: t.detach().numpy())
    return [as_np(out.detach())] + [as_np(t) for t in grads_out]


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request, monkeypatch):
    """Run with that many intra-op threads, each taking as little as one block of rows."""
    monkeypatch.setattr(norm, "_BLOCKS_PER_THREAD", 1)
    before = dl.get_num_threads()
    dl.set_num_threads(request.param)
    yield request.param
    dl.set_num_threads(before)


@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 2e-5)])
@pytest.mark.parametrize("grads", GRADS, ids=str)
@pytest.mark.parametrize("in_shape, shape, block", SPLITS, ids=str)
def test_blocks_match_torch(in_shape, shape, block, grads, dtype, tol, threads, monkeypatch):
    monkeypatch.setattr(norm, "_BLOCK", block)
    rs = np.random.default_rng(sum(in_shape))
    x = (rs.standard_normal(in_shape) * 2 + 0.5).astype(dtype)
    params = [None if r is None else rs.standard_normal(shape).astype(dtype) for r in grads[1:]]
    requires = [grads[0]] + [bool(r) for r in grads[1:]]
    g = rs.standard_normal(in_shape).astype(dtype)
    ours = _run(dl, x, shape, params, requires, g, 1e-5)
    ref = _run(torch, x, shape, params, requires, g, 1e-5)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("in_shape, shape", [((3, 0), (0,)), ((0, 4), (4,)), ((2, 0, 3), (0, 3))])
def test_empty_inputs_match_torch(in_shape, shape):
    rs = np.random.default_rng(0)
    x, g = np.zeros(in_shape, np.float32), np.zeros(in_shape, np.float32)
    params = [rs.standard_normal(shape).astype(np.float32) for _ in range(2)]
    ours = _run(dl, x, shape, params, [True] * 3, g, 1e-5)
    for a, b in zip(ours, _run(torch, x, shape, params, [True] * 3, g, 1e-5)):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_gradient_of_a_view_is_its_own_array():
    """grad_x is allocated in the input's shape, so autograd keeps it without a copy."""
    x = dl.randn(6, 4, 5, requires_grad=True)
    dl.functional.layer_norm(x, (4, 5)).backward(dl.randn(6, 4, 5))
    assert x.grad.array.base is None and x.grad.shape == (6, 4, 5)


def test_threaded_gradients_are_the_same_every_run(threads, monkeypatch):
    """The weight and bias gradients, summed per thread's chunk of rows, are added in row
    order: repeated runs give the same bits."""
    monkeypatch.setattr(norm, "_BLOCK", 64)
    rs = np.random.default_rng(0)
    x, g = (rs.standard_normal((301, 16)).astype(np.float32) for _ in range(2))
    params = [rs.standard_normal(16).astype(np.float32) for _ in range(2)]
    first = _run(dl, x, (16,), params, [True, True, True], g, 1e-5)
    for _ in range(5):
        again = _run(dl, x, (16,), params, [True, True, True], g, 1e-5)
        for a, b in zip(first, again, strict=True):
            np.testing.assert_array_equal(a, b)
