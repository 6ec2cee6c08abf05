"""Intra-op threads: how many CPU threads one op may use for its independent blocks.

NumPy runs each elementwise call on one core; only its BLAS spreads a matrix product over
several. The CPU ops whose work falls into independent cache blocks (attention over blocks
of the batch, GELU and erf over blocks of elements, layer norm over blocks of rows) hand
those blocks to `parallel_for`, which runs them on up to `get_num_threads()` threads: the
calling thread and a shared pool. NumPy releases the GIL inside its loops, so blocks whose
calls each take tens of microseconds run side by side. Each block is computed the same way
whichever thread runs it, so elementwise results do not depend on the number of threads;
a sum over blocks (layer norm's weight gradient) is added per chunk, in row order, so it
is the same from run to run at a given number of threads.

OpenBLAS, NumPy's usual BLAS, keeps its worker threads spinning for about 2^28 cycles
(~0.1 s) after each matrix product, so a second thread that starts right after one shares
its core with a spinning worker and gains nothing. Its OPENBLAS_THREAD_TIMEOUT variable
shortens that wait, but OpenBLAS reads it only when NumPy loads it. So `import dlfree` sets
it to BLAS_IDLE_TIMEOUT (2^21 cycles, under a millisecond) when NumPy is not loaded
yet and the variable is unset. When NumPy came first with OpenBLAS and no such setting,
the default is one thread, which is then as fast.

The default is the number of CPUs this process may run on (or 1, as above);
`DLFREE_NUM_THREADS` or `set_num_threads` change it (1 runs every block in the calling
thread).
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["get_num_threads", "set_num_threads", "parallel_for", "for_blocks", "for_large_blocks",
           "for_elements", "quiet_blas_threads", "BLAS_IDLE_TIMEOUT", "CHUNKS_PER_THREAD"]

BLAS_IDLE_TIMEOUT = "21"  # OpenBLAS waits 2^N cycles before its idle threads sleep
# (20 let them fall asleep between the products of a small MLP step, 5-8 % slower; 22 left
# them spinning into the first milliseconds of an attention)

_STATE = threading.local()  # .inside: this thread is running a parallel_for chunk
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_threads: int | None = None
_blas_quiet = False  # OpenBLAS's idle timeout is known to be set (quiet_blas_threads)


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _check(n, source: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{source} must be a positive integer number of threads, got {n!r}")
    return n


def get_num_threads() -> int:
    """How many threads an op may use for its blocks (the caller's included)."""
    global _threads
    if _threads is None:
        setting = os.environ.get("DLFREE_NUM_THREADS", "").strip()
        if setting:
            try:
                _threads = _check(int(setting), "DLFREE_NUM_THREADS")
            except ValueError:
                raise ValueError("DLFREE_NUM_THREADS must be a positive integer number of "
                                 f"threads, got {setting!r}") from None
        else:
            _threads = _available_cpus() if _blas_threads_sleep() else 1
    return _threads


def set_num_threads(n: int) -> None:
    """Let ops use up to `n` threads (n >= 1) from now on, as torch.set_num_threads."""
    global _threads, _pool
    n = _check(n, "set_num_threads: n")
    with _lock:
        if _pool is not None and n != _threads:
            _pool.shutdown(wait=False)
            _pool = None
        _threads = n


def quiet_blas_threads() -> None:
    """Set OPENBLAS_THREAD_TIMEOUT before NumPy loads OpenBLAS (see the module docstring);
    `import dlfree` calls it first thing. Does nothing when NumPy is loaded or it is set."""
    global _blas_quiet
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        _blas_quiet = True
    elif "numpy" not in sys.modules:
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_IDLE_TIMEOUT
        _blas_quiet = True


def _blas_threads_sleep() -> bool:
    """Whether NumPy's BLAS threads stop spinning soon after a product: they do when the
    timeout was set in time, and when the BLAS is not OpenBLAS."""
    if _blas_quiet:
        return True
    from .backends.openblas import numpy_blas

    return "openblas" not in numpy_blas().lower()


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="dlfree-op")
        return _pool


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool when needed."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_pool)


def _run_chunk(fn, lo: int, hi: int) -> None:
    _STATE.inside = True
    try:
        fn(lo, hi)
    finally:
        _STATE.inside = False


# Chunks per thread in parallel_for: a thread that starts late or runs on a busy core
# leaves its unstarted chunks to the others instead of keeping them waiting.
CHUNKS_PER_THREAD = 4


def parallel_for(count: int, fn, min_chunk: int = 1, products: bool = False,
                 single: bool = False) -> None:
    """fn(lo, hi) over consecutive chunks of range(count), at least `min_chunk` items each
    and up to `CHUNKS_PER_THREAD` per thread, each run by the next thread free to take it;
    returns when all are done, raising the first error a chunk raised. With `single`
    every item is a chunk: for a few dozen items that each take long, so that the threads
    finish within one item of each other.

    The calling thread takes chunks itself. The chunks depend only on `count`, `min_chunk`
    and the number of threads, so a caller that keeps a result per chunk and combines
    them in chunk order gets the same result every run. Worker chunks run in a copy of the
    caller's context (NumPy's error state is a context variable). A call from inside a
    chunk runs serially, so nested ops neither deadlock nor oversubscribe the cores.
    `products` says the chunks multiply matrices: OpenBLAS then runs one thread per chunk
    meanwhile (see dlfree.backends.openblas).
    """
    threads = get_num_threads()
    chunks = count if single else \
        min(threads * CHUNKS_PER_THREAD, count // max(min_chunk, 1))
    if threads <= 1 or chunks <= 1 or getattr(_STATE, "inside", False):
        if count > 0:
            fn(0, count)
        return
    if products:
        from .backends.openblas import one_thread_each

        with one_thread_each():
            _run_chunks(count, fn, chunks, threads)
    else:
        _run_chunks(count, fn, chunks, threads)


class _Chunks:
    """The chunks of one parallel_for call, handed out one at a time to whichever thread
    asks; after a chunk's error no further chunk is handed out."""

    def __init__(self, count: int, chunks: int, fn):
        self.bounds = [count * i // chunks for i in range(chunks + 1)]
        self.fn, self.next, self.failed = fn, 0, False
        self.lock = threading.Lock()

    def _take(self):
        with self.lock:
            i = self.next
            if self.failed or i + 1 >= len(self.bounds):
                return None
            self.next = i + 1
            return self.bounds[i], self.bounds[i + 1]

    def run(self) -> None:
        """Run chunks until none is left."""
        while (chunk := self._take()) is not None:
            try:
                _run_chunk(self.fn, *chunk)
            except BaseException:
                self.failed = True
                raise


def _run_chunks(count: int, fn, chunks: int, threads: int) -> None:
    work = _Chunks(count, chunks, fn)
    pool = _executor(threads - 1)
    futures = []
    for _ in range(min(threads, chunks) - 1):
        try:
            futures.append(pool.submit(contextvars.copy_context().run, work.run))
        except RuntimeError:  # set_num_threads, in another thread, shut this pool down:
            break             # the threads already asked, and this one, take every chunk
    try:
        work.run()
    finally:
        errors = [f.exception() for f in futures]  # waits for every thread's chunks
    for error in errors:
        if error is not None:
            raise error


def for_blocks(device, count: int, fn, min_chunk: int = 1, products: bool = False) -> None:
    """`parallel_for` on the CPU; elsewhere (a GPU stream orders the work) fn(0, count)."""
    if device.type == "cpu":
        parallel_for(count, fn, min_chunk, products)
    elif count > 0:
        fn(0, count)


# Work over fewer bytes than this runs on the calling thread: a thread would cost more.
_THREADED_BYTES = 1 << 20


def for_large_blocks(xp, count: int, nbytes: int, fn) -> None:
    """`parallel_for` for work over `nbytes` of NumPy (`xp`) arrays of at least
    `_THREADED_BYTES`; smaller work, or another array library, runs fn(0, count) here."""
    if xp.__name__ == "numpy" and nbytes >= _THREADED_BYTES:
        parallel_for(count, fn)
    elif count > 0:
        fn(0, count)


# Elements per block of `for_elements`: 256 KiB of float32, which stays in the L2 cache
# between a kernel's passes over it.
_ELEMENT_BLOCK = 1 << 16


def for_elements(xp, fn, out, *inputs, runs: bool = False) -> bool:
    """fn(out_part, *input_parts) over matching blocks of `_ELEMENT_BLOCK` elements of
    `out` and `inputs`, run by `parallel_for`: an elementwise kernel of several
    passes then makes them over one block in cache, on every thread. With `runs`, fn
    takes each chunk's run of blocks in one call instead (a compiled loop of one pass
    gains nothing from blocks, and each call costs microseconds). It applies to NumPy
    arrays all C-contiguous, of one shape and together of at least `_THREADED_BYTES`;
    returns False, doing nothing, otherwise (a small kernel runs fastest as one call)."""
    arrays = (out,) + inputs
    if xp.__name__ != "numpy" or sum(a.nbytes for a in arrays) < _THREADED_BYTES or \
            any(a.shape != out.shape or not a.flags.c_contiguous for a in arrays):
        return False
    flat = [a.reshape(-1) for a in arrays]
    size = out.size

    def run(lo: int, hi: int) -> None:
        if runs:
            part = slice(lo * _ELEMENT_BLOCK, min(hi * _ELEMENT_BLOCK, size))
            fn(*[a[part] for a in flat])
            return
        for start in range(lo * _ELEMENT_BLOCK, min(hi * _ELEMENT_BLOCK, size), _ELEMENT_BLOCK):
            part = slice(start, min(start + _ELEMENT_BLOCK, size))
            fn(*[a[part] for a in flat])
    parallel_for(-(-size // _ELEMENT_BLOCK), run)
    return True
