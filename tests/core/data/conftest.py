"""A second, fake CPU-like device (support.fake_backend), to test device placement and mixing
without a GPU."""

from __future__ import annotations

import dlfree as dl
from dlfree.device import _backends, register_backend

import pytest

from support.fake_backend import DataTestBackend


@pytest.fixture
def fake_device():
    register_backend(DataTestBackend())
    yield dl.Device("datatest")
    _backends.pop("datatest")
