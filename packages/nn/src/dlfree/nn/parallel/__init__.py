"""Data-parallel wrappers of modules (`dl.nn.parallel.DistributedDataParallel`)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
