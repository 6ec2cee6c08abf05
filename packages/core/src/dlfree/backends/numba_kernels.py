"""Fused CPU loops compiled by numba, used in place of some NumPy block kernels when numba
is installed (`pip install dlfree[numba]`): exact GELU and its gradient in float32, layer
norm forward and backward over rows, batch norm's statistics, output and gradients per
channel, an LSTM step's gates forward and backward in float32, 3x3 convolutions of
stride 1 with their weight gradient, the tap rows of their GEMMs over many channels
(`ops.conv`) and Winograd's tile transforms (`ops.winograd`), and the shifted layout's
copies of 2-d images (`im2col`).

A NumPy kernel makes one pass over its block per array operation (about 20 for GELU);
each loop here makes one pass, with every intermediate in a register, which is 4-8x
faster on those kernels. The loops are compiled without the GIL, one block or chunk of
rows per call, and `dlfree.threads.parallel_for` runs them side by side exactly as it runs
the NumPy block kernels: numba's own thread pool is never started, and the block
decomposition, hence every result, is the one the NumPy path uses (the convolution loops
have their own work items, each output summed whole by one, so their results do not
depend on the thread count either). They compute the same formulas as the NumPy kernels,
to float32 rounding; the convolutions sum in another order than a GEMM, within the bound
stated in tests/core/test_conv_nine_taps.py.

`kernels()` imports numba at the first call and returns None when it is not installed or
when `DLFREE_NUMBA=0`; `set_enabled` switches them off and on at run time (the tests run
both paths). Each loop is compiled at its first call for its dtypes and cached on disk
(numba's `cache=True`), so later processes load it in milliseconds.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

__all__ = ["kernels", "kernels_for", "set_enabled"]

_enabled: bool | None = None  # None: not decided yet (the environment, then numba's presence)
_module = None


def _wanted() -> bool:
    setting = os.environ.get("DLFREE_NUMBA", "").strip()
    if setting not in ("", "0", "1"):
        raise ValueError(f"DLFREE_NUMBA must be 0 (NumPy kernels) or 1 (numba's when "
                         f"installed), got {setting!r}")
    return setting != "0" and importlib.util.find_spec("numba") is not None


def set_enabled(flag: bool | None) -> None:
    """Use the compiled loops (when numba is installed) or the NumPy kernels from now on;
    None goes back to what `DLFREE_NUMBA` and numba's presence say."""
    global _enabled
    installed = importlib.util.find_spec("numba") is not None
    _enabled = None if flag is None else bool(flag) and installed


def kernels():
    """The module of compiled loops (`dlfree.backends._numba_loops`), or None."""
    global _enabled, _module
    if _enabled is None:
        _enabled = _wanted()
    if not _enabled:
        return None
    if _module is None:
        _module = importlib.import_module("._numba_loops", __package__)
    return _module


def kernels_for(xp, dtypes: str, *arrays):
    """`kernels()` where its loops can run: `xp` is NumPy and every one of `arrays` (None
    skipped) has the same dtype, one of `dtypes` (NumPy dtype characters, e.g. "fd");
    else None."""
    given = [a for a in arrays if a is not None]
    if xp.__name__ != "numpy" or not given or given[0].dtype.char not in dtypes:
        return None
    if any(a.dtype != given[0].dtype for a in given):
        return None
    return kernels()
