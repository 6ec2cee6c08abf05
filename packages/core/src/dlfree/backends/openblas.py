"""NumPy's OpenBLAS, reached through ctypes: its thread count, to be set to one while the
intra-op threads run blocks that multiply matrices, and its GEMM, for the products that
`numpy.matmul` cannot express (see `gemm`).

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
from typing import NamedTuple

_lock = threading.Lock()
_api = None  # an _OpenBLAS, or () when there is none; None: not looked up yet
_regions = 0  # regions running now
_saved = 0  # OpenBLAS's thread count before the first of them


def numpy_blas() -> str:
    """The name of the BLAS NumPy was built with ("scipy-openblas", "accelerate", ...), or
    "" where NumPy does not say."""
    import numpy

    blas = numpy.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return str(blas.get("name") or "")


class _OpenBLAS(NamedTuple):
    """The functions of one OpenBLAS library used here."""

    path: str
    get_num_threads: object
    set_num_threads: object
    gemm: dict  # NumPy dtype name -> its cblas_?gemm, arguments declared


def _cblas_gemm(lib, name: str, real, index) -> object:
    """`lib`'s cblas_?gemm called `name`, its argument types set (`real` the element's
    ctypes type, `index` that of dimensions), or None where it has none."""
    function = getattr(lib, name, None)
    if function is not None:
        enum, pointer = ctypes.c_int, ctypes.c_void_p
        function.argtypes = (enum, enum, enum, index, index, index, real, pointer, index,
                             pointer, index, real, pointer, index)
        function.restype = None
    return function


def _find_api() -> tuple:
    """NumPy's OpenBLAS among the loaded libraries, as an `_OpenBLAS` (SciPy may load an
    OpenBLAS of its own: NumPy's, in NumPy's folders, comes first); the names depend on
    how it was built (scipy's prefix; the suffix 64_ for 64-bit integers)."""
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
                if get is None or set_ is None:
                    continue
                set_.argtypes, set_.restype = (ctypes.c_int,), None
                cblas = "scipy_cblas" if prefix == "scipy_openblas" else "cblas"
                index = ctypes.c_int64 if suffix else ctypes.c_int
                gemm = {dtype: _cblas_gemm(lib, f"{cblas}_{letter}gemm{suffix}", real, index)
                        for dtype, letter, real in (("float32", "s", ctypes.c_float),
                                                    ("float64", "d", ctypes.c_double))}
                return _OpenBLAS(path, get, set_, {k: f for k, f in gemm.items() if f})
    return ()


def _found() -> tuple:
    global _api
    if _api is None:
        _api = _find_api()
    return _api


def api() -> tuple:
    """(get_num_threads, set_num_threads) of NumPy's OpenBLAS, or () where there is none."""
    found = _found()
    return (found.get_num_threads, found.set_num_threads) if found else ()


def library() -> str | None:
    """The file of NumPy's OpenBLAS that `api()` talks to, or None."""
    return _found().path if _found() else None


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


# CBLAS's constants for a row-major product and for an operand as it is or transposed.
_ROW_MAJOR, _AS_IS, _TRANSPOSED = 101, 111, 112


def _blas_view(a):
    """How BLAS reads the 2-d NumPy array `a` in place: (transpose flag, leading
    dimension), or None where its strides fit neither a row-major matrix nor the
    transpose of one (unit steps along one axis, whole rows along the other)."""
    size = a.itemsize
    rows, cols = a.shape
    row_step, col_step = a.strides
    if col_step == size or cols == 1:
        lead = max(cols, 1) if rows == 1 else row_step // size
        if (rows == 1 or row_step % size == 0) and lead >= max(cols, 1):
            return _AS_IS, lead
    if row_step == size or rows == 1:
        lead = max(rows, 1) if cols == 1 else col_step // size
        if (cols == 1 or col_step % size == 0) and lead >= max(rows, 1):
            return _TRANSPOSED, lead
    return None


def gemm(a, b, out, accumulate: bool = False) -> None:
    """out = a @ b, or out += a @ b with `accumulate`, for 2-d NumPy arrays (out must not
    overlap a or b).

    BLAS reads each operand where it lies, a view with a row stride other than its width
    or a transposed one included, and adds into `out` without a temporary, which
    `numpy.matmul` does not: NumPy copies some such views first, and a sum of products
    costs a product and an add per term. float32 and float64 arrays go to NumPy's
    OpenBLAS; others, or where NumPy's BLAS is not an OpenBLAS found here, take matmul.
    """
    found = _found()
    function = found.gemm.get(out.dtype.name) if found else None
    (m, k), n = a.shape, b.shape[1]
    if function is not None and a.dtype == b.dtype == out.dtype and m and n and k:
        view_a, view_b, view_out = _blas_view(a), _blas_view(b), _blas_view(out)
        if view_a and view_b and view_out and view_out[0] == _AS_IS:
            function(_ROW_MAJOR, view_a[0], view_b[0], m, n, k, 1.0, a.ctypes.data, view_a[1],
                     b.ctypes.data, view_b[1], 1.0 if accumulate else 0.0, out.ctypes.data,
                     view_out[1])
            return
    if accumulate:
        out += a @ b
    else:
        import numpy

        numpy.matmul(a, b, out=out)
