"""Shared fixtures: the available backends (CuPy ones marked `gpu`), a second fake CPU-like
device, and a seeded RNG."""

from __future__ import annotations

import dlfree as dl
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
