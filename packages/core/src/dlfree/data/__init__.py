"""Data loading with torch.utils.data's names: datasets, samplers, collation, and the
DataLoader with background prefetching and mid-epoch resume; `datasets` has standard sets."""

from . import datasets
from .collate import default_collate, default_convert
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .loader import DataLoader
from .prefetch import WorkerInfo, get_worker_info
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset",
           "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "datasets",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
