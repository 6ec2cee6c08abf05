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
import os
import threading

_lock = threading.Lock()
_api = None  # (path, get_num_threads, set_num_threads), () when none; None: not looked up
_regions = 0  # regions running now
_saved = 0  # OpenBLAS's thread count before the first of them


def numpy_blas() -> str:
    """The name of the BLAS NumPy was built with ("scipy-openblas", "accelerate", ...), or
    "" where NumPy does not say."""
    import numpy

    blas = numpy.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return str(blas.get("name") or "")


def _find_api() -> tuple:
    """(path, get_num_threads, set_num_threads) of NumPy's OpenBLAS among the loaded
    libraries (SciPy may load an OpenBLAS of its own: NumPy's, in NumPy's folders, comes
    first); the names depend on how it was built (scipy's prefix, 64-bit integers)."""
    import numpy  # loads OpenBLAS, if it is NumPy's BLAS

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:  # not Linux
        return ()
    numpy_dir = os.path.dirname(numpy.__file__)  # its libraries: numpy.libs, numpy/.dylibs
    for path in sorted(paths, key=lambda p: (not os.path.dirname(p).startswith(numpy_dir), p)):
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
                    return path, get, set_
    return ()


def _found() -> tuple:
    global _api
    if _api is None:
        _api = _find_api()
    return _api


def api() -> tuple:
    """(get_num_threads, set_num_threads) of NumPy's OpenBLAS, or () where there is none."""
    return _found()[1:]


def library() -> str | None:
    """The file of NumPy's OpenBLAS that `api()` talks to, or None."""
    return _found()[0] if _found() else None


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
