"""Shared fixtures: the available backends (CuPy ones marked `gpu`) and a seeded RNG."""

from __future__ import annotations

import numpy as np
import pytest

from support.devices import DEVICES


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """Every backend a test should run on; CuPy cases skip cleanly without a GPU."""
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
