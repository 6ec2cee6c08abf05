"""The devices a test runs on: NumPy always, CuPy marked `gpu` and skipped cleanly where
no GPU answers (the `device` fixture in tests/conftest.py takes its parameters from here)."""

from __future__ import annotations

import pytest


def cuda_answers() -> bool:
    """Whether CuPy imports and an NVIDIA GPU answers; never raises."""
    try:
        import dlfree as dl

        return bool(getattr(dl, "cuda", None)) and dl.cuda.is_available()
    except Exception:
        return False


DEVICES = [
    pytest.param("cpu", id="numpy"),
    pytest.param("cuda", id="cupy", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not cuda_answers(), reason="CuPy or an NVIDIA GPU is not available"),
    ]),
]
