"""Shared fixtures: the available backends (CuPy ones marked `gpu`) and a seeded RNG."""

from __future__ import annotations

import numpy as np
import pytest


def _cuda_answers() -> bool:
    try:
        import dlfree as dl

        return bool(getattr(dl, "cuda", None)) and dl.cuda.is_available()
    except Exception:
        return False


DEVICES = [
    pytest.param("cpu", id="numpy"),
    pytest.param("cuda", id="cupy", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not _cuda_answers(), reason="CuPy or an NVIDIA GPU is not available"),
    ]),
]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """Every backend a test should run on; CuPy cases skip cleanly without a GPU."""
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
