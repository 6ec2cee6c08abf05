"""A second, fake CPU-like backend ("datatest"): NumPy arrays of their own type, so that
tests of device placement and of mixing devices run without a GPU."""

from __future__ import annotations

from dlfree.backends import NumpyBackend

import numpy as np


class _DataTestArray(np.ndarray):
    """Arrays that live on the fake device."""


class DataTestBackend(NumpyBackend):
    name = "datatest"
    device_type = "datatest"
    array_type = _DataTestArray

    def asarray(self, obj, dtype=None, index=0):
        return np.asarray(obj, dtype=dtype).view(_DataTestArray)

    def to_numpy(self, array):
        return np.asarray(array)
