"""The CPU backend: NumPy arrays."""

import numpy as np

from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    device_type = "cpu"
    xp = np
    array_type = np.ndarray
