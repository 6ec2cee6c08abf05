"""Shared fixtures: the available backends (CuPy ones marked `gpu`), a second fake CPU-like
device, a seeded RNG, and the two paths of the CPU kernels (NumPy's, numba's)."""

from __future__ import annotations

import importlib.util

import dlfree as dl
from dlfree.backends import numba_kernels
from dlfree.device import _backends, register_backend

import numpy as np
import pytest

from support.devices import DEVICES
from support.fake_backend import DataTestBackend


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """Every backend a test should run on; CuPy cases skip cleanly without a GPU."""
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def fake_device():
    """The "datatest" device (support.fake_backend), to test placement and mixing devices
    without a GPU."""
    register_backend(DataTestBackend())
    yield dl.Device("datatest")
    _backends.pop("datatest")


@pytest.fixture(params=["numpy-kernels", "numba-loops"])
def kernel_path(request) -> str:
    """Run once with the NumPy block kernels and once with numba's compiled loops
    (dlfree.backends.numba_kernels), which is skipped where numba is not installed."""
    compiled = request.param == "numba-loops"
    if compiled and importlib.util.find_spec("numba") is None:
        pytest.skip("numba is not installed (pip install dlfree[numba])")
    numba_kernels.set_enabled(compiled)
    assert (numba_kernels.kernels() is not None) == compiled
    yield request.param
    numba_kernels.set_enabled(None)
