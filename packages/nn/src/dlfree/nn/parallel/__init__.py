"""Data-parallel wrappers of modules: `dl.nn.parallel.DistributedDataParallel` is
`dlfree.distributed.DistributedDataParallel`, which lives in the core (docs/distributed.md)."""

from dlfree.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
