"""The CPU backend: NumPy arrays, and the C allocator settings that keep their memory warm.

On Linux with glibc, the backend sets two malloc parameters once, when it starts (it is
process-wide: every malloc in the process sees it). glibc keeps freed blocks in free lists
by size (its bins) and reuses them, but its defaults hand a freed block of more than
128 KiB back to the OS and shrink the heap whenever more than 128 KiB lie free at its top.
A training step's saved activations and temporaries are freed together at its end, so the
heap shrank by the step's whole working set and every step took it back from the OS a
page fault (and a zeroed page) per 4 KiB: 22,000 faults per CIFAR ResNet-20 step at batch
128. The backend instead lets blocks up to 32 MiB, glibc's ceiling, come from the heap
(M_MMAP_THRESHOLD), and keeps free heap for reuse up to a quarter of the machine's memory,
at most 2 GiB (M_TRIM_THRESHOLD): the size-bucketed cache that CuPy's pool is on the GPU,
with glibc's bins as the buckets. Like that pool, the process then holds on to its peak:
its resident memory can stay that much above what its live arrays need, and
`release_memory()` hands the free part back. Set DLFREE_MALLOC_TUNING=0 to keep glibc's
defaults; a malloc setting of your own, in GLIBC_TUNABLES or MALLOC_*_ variables, is left
alone too."""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

from .base import Backend

try:  # NumPy 2 keeps its error state in a context variable; setting it directly is cheap
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    _IGNORE_ALL = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):  # another NumPy layout: use np.errstate
    _extobj_contextvar = None

# Temporaries for `add_scaled` stay this small, so they never reach the allocator's
# mmap threshold (a fresh mmap per call costs a page fault per 4 KiB).
_CHUNK = 16384


# mallopt parameter numbers, from glibc's malloc.h
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# glibc's ceiling for its dynamic mmap threshold, 4 MiB per byte of a long: 32 MiB on 64 bits
_MMAP_THRESHOLD = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)
_USER_MALLOC_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                         "MALLOC_MMAP_MAX_")


def _kept_free_bytes() -> int:
    """How much free heap the process keeps: a quarter of the machine's memory, within
    what mallopt takes (a C int), and at least twice the mmap threshold."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = 0
    return max(2 * _MMAP_THRESHOLD, min(physical // 4, 2**31 - 1))


def _glibc():
    """The process's C library when it is glibc on Linux, else None."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None)  # the symbols the process has loaded, libc's among them
    return libc if hasattr(libc, "gnu_get_libc_version") else None  # musl: its own malloc


def tune_malloc() -> bool:
    """Keep freed array memory in the process for reuse (see the module docstring); True
    when the settings were applied. Does nothing off glibc, under DLFREE_MALLOC_TUNING=0, or
    when the environment configures malloc already."""
    if os.environ.get("DLFREE_MALLOC_TUNING", "1").strip() == "0" or \
            "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "") or \
            any(name in os.environ for name in _USER_MALLOC_SETTINGS):
        return False
    libc = _glibc()
    if libc is None:
        return False
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    # setting one threshold turns off glibc's dynamic adjustment of both, so set the trim
    # threshold only once the mmap threshold is in place
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and \
        bool(libc.mallopt(_M_TRIM_THRESHOLD, _kept_free_bytes()))


def release_memory() -> bool:
    """Hand the free memory that the allocator keeps for reuse back to the OS (glibc's
    malloc_trim), as `cupy.get_default_memory_pool().free_all_blocks()` does on the GPU:
    for after a phase whose peak will not come again. True when some was released; False
    off glibc, where there is nothing to do."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return bool(libc.malloc_trim(0))


class _Quiet:
    """Like `np.errstate(all="ignore")` at a fraction of its cost (ops run inside it)."""

    __slots__ = ("token",)

    def __enter__(self):
        self.token = _extobj_contextvar.set(_IGNORE_ALL)

    def __exit__(self, *exc):
        _extobj_contextvar.reset(self.token)


class NumpyBackend(Backend):
    name = "numpy"
    device_type = "cpu"
    xp = np
    array_type = np.ndarray

    def __init__(self):
        tune_malloc()

    def context(self, index: int = 0):
        """torch never warns on inf/nan results; NumPy would, so ops run with it silenced."""
        return _Quiet() if _extobj_contextvar is not None else np.errstate(all="ignore")

    def add_scaled(self, target, value, alpha, subtract: bool = False) -> None:
        """target += alpha * value (or -=) in place, in chunks that need no large temporary."""
        if value.shape != target.shape or not (target.flags.c_contiguous and
                                               value.flags.c_contiguous):
            super().add_scaled(target, value, alpha, subtract)
            return
        flat_t, flat_v = target.reshape(-1), value.reshape(-1)
        scratch = np.empty(min(_CHUNK, flat_t.size), dtype=np.result_type(value, target))
        combine = np.subtract if subtract else np.add
        for start in range(0, flat_t.size, _CHUNK):
            part = flat_t[start:start + _CHUNK]
            buf = scratch[:part.size]
            np.multiply(flat_v[start:start + _CHUNK], alpha, out=buf)
            combine(part, buf, out=part, casting="same_kind")
