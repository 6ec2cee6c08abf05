"""Array backends: the array module (`xp`) and the few kernels it lacks, per device type."""

from .base import Backend
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "NumpyBackend"]
