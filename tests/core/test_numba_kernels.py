"""numba's compiled loops (dlfree.backends.numba_kernels): switched by DLFREE_NUMBA and
set_enabled, not imported with dlfree, used by GELU and layer norm when on, and their exp
accurate over every float32 range. The results of the ops on both paths are checked
against their references in test_special_accuracy.py and test_layer_norm_blocks.py."""

from __future__ import annotations

import math
import subprocess
import sys

import dlfree as dl
import dlfree.functional as F
from dlfree.backends import numba_kernels

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is not installed (pip install dlfree[numba])")


@pytest.fixture
def environment(monkeypatch):
    """Let each test set DLFREE_NUMBA, the choice read again at the next `kernels()`."""
    numba_kernels.set_enabled(None)
    yield monkeypatch
    monkeypatch.delenv("DLFREE_NUMBA", raising=False)
    numba_kernels.set_enabled(None)


@pytest.mark.parametrize("value, on", [("0", False), ("1", True), ("", True)])
def test_the_environment_switches_the_loops(environment, value, on):
    environment.setenv("DLFREE_NUMBA", value)
    assert (numba_kernels.kernels() is not None) is on


def test_a_bad_setting_names_the_valid_ones(environment):
    environment.setenv("DLFREE_NUMBA", "yes")
    with pytest.raises(ValueError, match=r"DLFREE_NUMBA must be 0 .* or 1 .*'yes'"):
        numba_kernels.kernels()


def test_set_enabled_overrides_the_environment(environment):
    environment.setenv("DLFREE_NUMBA", "0")
    numba_kernels.set_enabled(True)
    assert numba_kernels.kernels() is not None
    numba_kernels.set_enabled(False)
    assert numba_kernels.kernels() is None


def test_importing_dlfree_leaves_numba_unloaded():
    """numba takes ~0.3 s to import: only the first compiled loop pays for it."""
    code = "import sys, dlfree; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _spy(monkeypatch, loops, name: str) -> list:
    """Count the calls of loop `name` (its arguments' first shapes)."""
    calls, original = [], getattr(loops, name)

    def spy(*args):
        calls.append(args[0].shape)
        original(*args)

    monkeypatch.setattr(loops, name, spy)
    return calls


@pytest.mark.parametrize("on", [False, True])
def test_gelu_and_layer_norm_run_the_loops_when_on(monkeypatch, on):
    numba_kernels.set_enabled(True)
    loops = numba_kernels.kernels()
    counted = {name: _spy(monkeypatch, loops, name) for name in
               ("gelu", "gelu_grad", "layer_norm_rows", "layer_norm_rows_grads")}
    numba_kernels.set_enabled(on)
    try:
        x = dl.randn(16, 8, requires_grad=True)
        F.layer_norm(F.gelu(x), (8,)).backward(dl.randn(16, 8))
    finally:
        numba_kernels.set_enabled(None)
    assert all(bool(calls) is on for calls in counted.values()), counted


@pytest.mark.parametrize("on", [False, True])
def test_relu_runs_the_loops_past_the_threading_size_when_on(monkeypatch, on):
    """relu and its gradient take numba's loops where they run in threaded blocks (past
    1 MiB of arrays), each thread's run of blocks in one call; their values are held to
    torch's in tests/core/test_parity_elementwise.py."""
    numba_kernels.set_enabled(True)
    loops = numba_kernels.kernels()
    counted = {name: _spy(monkeypatch, loops, name) for name in ("relu", "relu_grad")}
    numba_kernels.set_enabled(on)
    before = dl.get_num_threads()
    dl.set_num_threads(2)
    try:
        x = dl.randn(8, 1 << 17, requires_grad=True)  # 16 blocks of 64 Ki elements
        F.relu(x).backward(dl.randn(8, 1 << 17))
    finally:
        dl.set_num_threads(before)
        numba_kernels.set_enabled(None)
    assert all(bool(calls) is on for calls in counted.values()), counted
    if on:  # one call per chunk (8 on two threads), not one per block
        assert all(len(calls) <= 2 * dl.threads.CHUNKS_PER_THREAD
                   for calls in counted.values()), counted


def test_exp_within_one_ulp_over_every_range():
    """The loops' exp against float64 exp, over [-104, 89] densely: within 1 ulp of the
    float32 result where that is normal, within the smallest subnormal below it, inf past
    float32's largest value, 0 far left, NaN for NaN."""
    from dlfree.backends import _numba_loops

    @_numba_loops.njit
    def exp_all(x, out):
        for i in range(x.size):
            out[i] = _numba_loops._exp(x[i])

    x = np.concatenate([np.linspace(-104, 89, 2_000_001), np.linspace(-1e-3, 1e-3, 20_001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30]]).astype(np.float32)
    got = np.empty_like(x)
    exp_all(x, got)
    with np.errstate(over="ignore"):  # exp(1e30) is inf in float64 too
        ref = np.exp(x.astype(np.float64))
    normal = (ref >= np.finfo(np.float32).tiny) & (ref <= np.finfo(np.float32).max)
    ulp = np.spacing(ref[normal].astype(np.float32)).astype(np.float64)
    assert (np.abs(got[normal] - ref[normal]) / ulp).max() <= 1
    tiny = ref < np.finfo(np.float32).tiny
    assert np.abs(got[tiny] - ref[tiny]).max() <= 2.0 ** -149
    assert np.all(np.isposinf(got[ref > np.finfo(np.float32).max]))
    assert np.isnan(got[np.isnan(x)]).all()
    assert np.all(got[x == 0] == 1) and np.all(got[x == -np.inf] == 0)
    assert math.isinf(float(got[np.argmax(x == 1e30)]))
