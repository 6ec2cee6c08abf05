"""Small classification data and models for the Trainer tests."""

from __future__ import annotations

import dlfree as dl
from dlfree import nn

import pytest

from support.train import blobs


@pytest.fixture
def loaders():
    """A function giving (train loader, validation loader) over blobs, in a fixed order."""

    def make(n: int = 24, batch_size: int = 4, seed: int = 0):
        x, y = blobs(n, seed=seed)
        data = dl.data.TensorDataset(dl.tensor(x), dl.tensor(y))
        return (dl.data.DataLoader(data, batch_size=batch_size),
                dl.data.DataLoader(data, batch_size=2 * batch_size))

    return make


@pytest.fixture
def mlp():
    """A function giving a small seeded classifier (4 -> 3)."""

    def make(seed: int = 0, hidden: int = 8):
        dl.manual_seed(seed)
        return nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 3))

    return make
