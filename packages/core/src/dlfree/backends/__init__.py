"""Array backends: the array module (`xp`) and the few kernels it lacks, per device type;
and torch's backend switches (`cudnn.benchmark`, `cuda.matmul.allow_tf32`, see `flags`)."""

from .base import Backend
from .cupy_backend import CupyBackend
from .flags import cuda, cudnn, mps
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "CupyBackend", "NumpyBackend", "cuda", "cudnn", "mps"]
