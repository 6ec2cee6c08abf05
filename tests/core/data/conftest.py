"""A second, fake CPU-like device, to test device placement and mixing without a GPU."""

from __future__ import annotations

import dlfree as dl
from dlfree.backends import NumpyBackend
from dlfree.device import _backends, register_backend

import numpy as np
import pytest


class _DataTestArray(np.ndarray):
    """Arrays that live on the fake device."""


class _DataTestBackend(NumpyBackend):
    name = "datatest"
    device_type = "datatest"
    array_type = _DataTestArray

    def asarray(self, obj, dtype=None, index=0):
        return np.asarray(obj, dtype=dtype).view(_DataTestArray)

    def to_numpy(self, array):
        return np.asarray(array)


@pytest.fixture
def fake_device():
    register_backend(_DataTestBackend())
    yield dl.Device("datatest")
    _backends.pop("datatest")
