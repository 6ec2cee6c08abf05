"""NumPy's OpenBLAS, reached through ctypes: its thread count, to be set to one while the
intra-op threads run blocks that multiply matrices.

Two threads that each call a threaded OpenBLAS product at once fight over OpenBLAS's one
pool of workers (an attention backward ran twice as slowly). OpenBLAS's thread count is
process-wide, so `one_thread_each()` lowers it to 1 while any such region runs and puts
it back when the last one ends. Where NumPy's BLAS is not an OpenBLAS found in the
process (Linux's /proc/self/maps names its file), it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

_lock = threading.Lock()
_api = None  # (get_num_threads, set_num_threads), () when there is none; None: not looked up
_regions = 0  # regions running now
_saved = 0  # OpenBLAS's thread count before the first of them


def _find_api() -> tuple:
    """OpenBLAS's get/set_num_threads in the loaded library; their names depend on how it
    was built (scipy's prefix, 64-bit integers)."""
    import numpy  # noqa: F401  (loads OpenBLAS, if it is NumPy's BLAS)

    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    except OSError:  # not Linux
        return ()
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and set_ is not None:
                    set_.argtypes, set_.restype = (ctypes.c_int,), None
                    return get, set_
    return ()


def api() -> tuple:
    global _api
    if _api is None:
        _api = _find_api()
    return _api


@contextlib.contextmanager
def one_thread_each():
    """OpenBLAS runs single-threaded inside the block (the callers are the threads)."""
    global _regions, _saved
    functions = api()
    if not functions:
        yield
        return
    get, set_ = functions
    with _lock:
        if _regions == 0:
            _saved = get()
            set_(1)
        _regions += 1
    try:
        yield
    finally:
        with _lock:
            _regions -= 1
            if _regions == 0:
                set_(_saved)
