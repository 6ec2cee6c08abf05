"""Adam's and AdamW's update as numba's one loop (`dlfree.optim._compiled`), used when numba
is installed: bit for bit the NumPy path's result for every option, threaded in blocks
for a large parameter, the parameter's version counter advanced as an in-place op does;
what the loop cannot take (a strided gradient, numba switched off) takes the NumPy path.
The NumPy path itself is held to torch.optim in test_torch_optimizers.py."""

from __future__ import annotations

import importlib.util

import dlfree as dl
from dlfree.backends import numba_kernels
from dlfree.errors import AutogradError
from dlfree.optim import Adam, AdamW, _compiled

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba is not installed (pip install dlfree[numba])")


@pytest.fixture
def loops(monkeypatch):
    """How many calls the compiled update got."""
    calls = []
    update = _compiled.adam_update

    def counted(*args):
        calls.append(args[-1] - args[-2])
        return update(*args)

    monkeypatch.setattr(_compiled, "adam_update", counted)
    return calls


def _train(compiled: bool, cls, dtype, shapes, steps=3, **options):
    """The parameters and both moments after `steps` updates from fixed gradients."""
    numba_kernels.set_enabled(compiled)
    try:
        rng = np.random.default_rng(0)
        params = [dl.Parameter(rng.standard_normal(s).astype(dtype)) for s in shapes]
        optimizer = cls(params, lr=1e-2, **options)
        for _ in range(steps):
            for p in params:
                p.grad = dl.tensor(rng.standard_normal(p.shape).astype(dtype))
            optimizer.step()
    finally:
        numba_kernels.set_enabled(None)
    states = [optimizer.state[p] for p in params]
    return [p.detach().numpy() for p in params] + \
        [s[k].numpy() for s in states for k in s if k != "step"]


@pytest.mark.parametrize("cls, options", [
    (AdamW, {}),
    (Adam, {}),
    (Adam, {"weight_decay": 0.1}),  # L2
    (AdamW, {"weight_decay": 0.1, "maximize": True}),
    (Adam, {"weight_decay": 0.1, "maximize": True, "amsgrad": True}),
    (AdamW, {"betas": (0.3, 0.0), "amsgrad": True}),  # lerp from the gradient's end; no decay of v
    (Adam, {"betas": (0.9, 0.999), "eps": 1e-3, "maximize": True}),
], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_loop_is_the_numpy_paths_update_bit_for_bit(loops, cls, options, dtype):
    shapes = [(30, 7), (5,), (3, 4, 5)]
    compiled = _train(True, cls, dtype, shapes, **options)
    assert len(loops) == 3 * len(shapes)
    numpy_path = _train(False, cls, dtype, shapes, **options)
    assert len(loops) == 3 * len(shapes)  # the NumPy path ran the second time
    for a, b in zip(compiled, numpy_path, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_large_parameter_runs_in_blocks_with_the_same_result(loops):
    shape = (600, 700)  # 1.6 MiB of float32: threaded, in blocks of 64 Ki elements
    compiled = _train(True, AdamW, np.float32, [shape], steps=2)
    assert len(loops) > 2 and sum(loops) == 2 * 600 * 700
    for a, b in zip(compiled, _train(False, AdamW, np.float32, [shape], steps=2),
                    strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_value_saved_before_the_step_is_refused(loops):
    """The loop writes the parameter's array itself; its version counter still advances."""
    p = dl.Parameter(np.ones(10, np.float32))
    y = (p * p).sum()  # saves p
    p.grad = dl.ones(10)
    before = p._vc[0]
    AdamW([p]).step()
    assert loops and p._vc[0] > before
    with pytest.raises(AutogradError, match="modified by an in-place operation"):
        y.backward()


def test_a_strided_gradient_takes_the_numpy_path(loops):
    p = dl.Parameter(np.ones((4, 6), np.float32))
    p.grad = dl.tensor(np.arange(24, dtype=np.float32).reshape(6, 4)).T  # a strided view
    AdamW([p], lr=0.1).step()
    assert not loops
    q = dl.Parameter(np.ones((4, 6), np.float32))
    q.grad = dl.tensor(np.ascontiguousarray(p.grad.numpy()))
    AdamW([q], lr=0.1).step()  # the same gradient, contiguous: the loop
    assert loops
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
