"""`dl.accelerator`: the device programs should use when one is there, as torch.accelerator.

Programs write `device = dl.accelerator.current_accelerator() or dl.device("cpu")`; here
the accelerator is a CUDA GPU served by CuPy, or none.
"""

from __future__ import annotations

from . import cuda
from .device import Device


def is_available() -> bool:
    """True when an accelerator (a CUDA GPU) can be used."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> Device | None:
    """The accelerator's device (`cuda`), or None when no GPU can be used (dl.free has no
    build without a usable GPU to report, so `check_available` changes nothing)."""
    return Device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """How many accelerators there are (0 without one)."""
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the accelerator ops use by default (0); -1 without one."""
    return 0 if cuda.is_available() else -1


def synchronize(device=None) -> None:
    """Wait for the work queued on the accelerator; nothing to wait for without one."""
    if cuda.is_available():
        cuda.synchronize(device)
