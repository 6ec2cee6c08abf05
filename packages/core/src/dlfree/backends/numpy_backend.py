"""The CPU backend: NumPy arrays."""

from __future__ import annotations

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
