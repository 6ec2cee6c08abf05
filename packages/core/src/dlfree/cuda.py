"""`dl.cuda`: is a GPU there, how many, and waiting for queued work.

`is_available()` is False both when CuPy is missing and when CuPy imports but no GPU
answers; `unavailable_reason()` says which.
"""

from __future__ import annotations

from types import ModuleType

from .errors import DeviceError

amp: ModuleType
"""`dl.cuda.amp`, torch's older home of autocast and GradScaler: `dl.amp` itself, set by
`dlfree/__init__.py` (the amp layer stands above this one)."""


def _backend():
    from .device import backend_for

    try:
        return backend_for("cuda")
    except DeviceError:
        return None


def unavailable_reason() -> str | None:
    """None when a CUDA GPU can be used, else why not."""
    backend = _backend()
    if backend is None:
        return "no installed backend serves device type 'cuda'"
    return backend.unavailable_reason()


def is_available() -> bool:
    return unavailable_reason() is None


def device_count() -> int:
    return _backend().device_count() if is_available() else 0


def synchronize(device=None) -> None:
    """Wait until the GPU has finished the work queued on `device` (default cuda:0)."""
    from .device import Device

    dev = Device(device if device is not None else "cuda")
    dev.backend.synchronize(dev.index)
