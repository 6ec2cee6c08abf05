"""Array backends: the array module (`xp`) and the few kernels it lacks, per device type."""

from .base import Backend
from .cupy_backend import CupyBackend
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "CupyBackend", "NumpyBackend"]
