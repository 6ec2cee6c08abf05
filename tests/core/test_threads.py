"""dlfree.threads: parallel_for's contract, the thread-count settings and the OpenBLAS idle
timeout that `import dlfree` sets, in fresh processes where import order matters."""

from __future__ import annotations

import contextvars
import json
import os
import subprocess
import sys
import threading
import time

import dlfree as dl
from dlfree import threads

import numpy as np
import pytest


@pytest.fixture
def two_threads():
    before = dl.get_num_threads()
    dl.set_num_threads(2)
    yield
    dl.set_num_threads(before)


def test_chunks_cover_the_range_once_in_order(two_threads):
    calls, lock = [], threading.Lock()

    def record(lo, hi):
        with lock:
            calls.append((lo, hi))

    threads.parallel_for(100, record)
    chunks = 2 * threads.CHUNKS_PER_THREAD
    bounds = [100 * i // chunks for i in range(chunks + 1)]
    assert sorted(calls) == list(zip(bounds[:-1], bounds[1:]))
    calls.clear()
    threads.parallel_for(3, record)  # fewer items than chunks: one each
    assert sorted(calls) == [(0, 1), (1, 2), (2, 3)]


def test_single_makes_every_item_a_chunk(two_threads):
    calls, lock = [], threading.Lock()

    def record(lo, hi):
        with lock:
            calls.append((lo, hi))

    threads.parallel_for(4 * threads.CHUNKS_PER_THREAD, record, single=True)
    assert sorted(calls) == [(i, i + 1) for i in range(4 * threads.CHUNKS_PER_THREAD)]


def test_a_late_threads_chunks_are_taken_by_the_others(two_threads):
    """The worker's first chunk stalls; the caller's thread runs every other chunk
    meanwhile rather than leaving the worker a fixed half."""
    main, stalled, on_main = threading.get_ident(), set(), []

    def work(lo, hi):
        me = threading.get_ident()
        if me != main and me not in stalled:
            stalled.add(me)
            time.sleep(0.5)
        on_main.append(me == main)

    total = 2 * threads.CHUNKS_PER_THREAD
    threads.parallel_for(total, work)
    assert len(on_main) == total and on_main.count(True) >= total - 1


def test_min_chunk_and_one_thread_run_a_single_chunk(two_threads):
    calls = []
    threads.parallel_for(5, lambda lo, hi: calls.append((lo, hi)), min_chunk=3)
    assert calls == [(0, 5)]  # two chunks would hold fewer than 3 items each
    dl.set_num_threads(1)
    threads.parallel_for(10, lambda lo, hi: calls.append((lo, hi)))
    assert calls == [(0, 5), (0, 10)]
    threads.parallel_for(0, lambda lo, hi: calls.append((lo, hi)))
    assert len(calls) == 2  # nothing to do: fn is not called


def test_chunks_run_on_two_threads_at_once(two_threads):
    """Each chunk waits for the other: this finishes only if they run concurrently."""
    barrier = threading.Barrier(2, timeout=10)
    idents = set()

    def meet(lo, hi):
        idents.add(threading.get_ident())
        barrier.wait()

    threads.parallel_for(2, meet)
    assert len(idents) == 2 and threading.get_ident() in idents


def test_for_elements_covers_every_element_once_in_whole_blocks(two_threads):
    """Blocks of _ELEMENT_BLOCK elements, the last one short, matching across arrays, on
    both threads for arrays past the threading threshold."""
    size = 5 * threads._ELEMENT_BLOCK + 123  # 1.3 MiB of float32: threaded
    x = np.arange(size, dtype=np.float32).reshape(-1, 7)
    out, parts, idents = np.zeros_like(x), [], set()

    def double(o, a):
        parts.append(o.size)
        idents.add(threading.get_ident())
        np.multiply(a, 2, out=o)
        time.sleep(0.02)  # long enough that a worker woken late still takes a block

    assert threads.for_elements(np, double, out, x)
    np.testing.assert_array_equal(out, 2 * x)
    assert sorted(parts) == [123] + [threads._ELEMENT_BLOCK] * 5 and len(idents) == 2


@pytest.mark.parametrize("second", ["transposed", "other shape", "small"])
def test_for_elements_declines_what_it_cannot_split_alike_or_need_not(second):
    """Arrays it cannot cut into matching blocks, and small ones (one call is faster)."""
    x = np.zeros((512, 768) if second != "small" else (4, 6), np.float32)
    y = {"transposed": np.zeros(x.shape[::-1], np.float32).T,
         "other shape": np.zeros(x.shape[::-1], np.float32), "small": x.copy()}[second]
    assert not threads.for_elements(np, lambda o, a: pytest.fail("ran"), x, y)


@pytest.mark.parametrize("failing_chunk", [0, 1])
def test_a_chunks_error_reaches_the_caller(two_threads, failing_chunk):
    """The error surfaces once no chunk is running: every other chunk that started has
    finished (no chunk starts after it)."""
    started, done = [], []

    def work(lo, hi):
        started.append(lo)
        if lo == failing_chunk:
            raise KeyError(f"chunk {lo}")
        time.sleep(0.05)
        done.append(lo)

    with pytest.raises(KeyError, match=f"chunk {failing_chunk}"):
        threads.parallel_for(2, work)
    assert failing_chunk in started and sorted(done) == sorted(set(started) - {failing_chunk})
    if failing_chunk == 1:  # chunk 0 is the caller's first: it ran to the end
        assert done == [0]
    total = []
    threads.parallel_for(2, lambda lo, hi: total.append(hi - lo))  # the pool still works
    assert sum(total) == 2


def test_nested_calls_run_serially(two_threads):
    inner = []

    def outer(lo, hi):
        threads.parallel_for(4, lambda a, b: inner.append((a, b)))

    threads.parallel_for(2, outer)
    assert inner == [(0, 4), (0, 4)]


def test_worker_chunks_see_the_callers_context(two_threads):
    """NumPy's error state is a context variable: a worker chunk obeys the caller's."""
    var = contextvars.ContextVar("var", default="unset")
    seen = {}

    def look(lo, hi):
        seen[lo] = var.get()
        with pytest.raises(FloatingPointError):
            np.exp(np.full(4, 1000.0))

    var.set("caller")
    with np.errstate(over="raise"):
        threads.parallel_for(2, look)
    assert seen == {0: "caller", 1: "caller"}


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2", None])
def test_set_num_threads_rejects_non_positive_integers(bad):
    before = dl.get_num_threads()
    with pytest.raises(ValueError, match="positive integer number of threads"):
        dl.set_num_threads(bad)
    assert dl.get_num_threads() == before


def _fresh(code: str, **env) -> dict:
    """Run `code` in a new interpreter with `env` added (None removes a variable); it prints
    one JSON object, returned here."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("OPENBLAS_THREAD_TIMEOUT", "DLFREE_NUM_THREADS")}
    environ.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


REPORT = ("import json, os; print(json.dumps({'threads': dlfree.get_num_threads(), "
          "'timeout': os.environ.get('OPENBLAS_THREAD_TIMEOUT')}))")
CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_importing_dlfree_first_sets_the_blas_timeout_and_uses_every_cpu():
    assert _fresh("import dlfree, numpy\n" + REPORT) == {
        "threads": CPUS, "timeout": threads.BLAS_IDLE_TIMEOUT}


def test_numpy_first_with_openblas_defaults_to_one_thread():
    blas = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    if "openblas" not in blas.lower():
        pytest.skip(f"NumPy's BLAS here is {blas}, not OpenBLAS")
    assert _fresh("import numpy, dlfree\n" + REPORT) == {"threads": 1, "timeout": None}


def test_a_timeout_of_your_own_is_kept():
    assert _fresh("import numpy, dlfree\n" + REPORT, OPENBLAS_THREAD_TIMEOUT="24") == {
        "threads": CPUS, "timeout": "24"}


def test_dlfree_num_threads_sets_the_default():
    assert _fresh("import dlfree\n" + REPORT, DLFREE_NUM_THREADS="3")["threads"] == 3


def test_a_bad_dlfree_num_threads_is_named():
    code = ("import dlfree\ntry:\n    dlfree.get_num_threads()\nexcept ValueError as e:\n"
            "    import json; print(json.dumps(str(e)))")
    assert "DLFREE_NUM_THREADS" in _fresh(code, DLFREE_NUM_THREADS="many")
    assert "'many'" in _fresh(code, DLFREE_NUM_THREADS="many")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_pool_of_its_own():
    code = """
import json, os, threading
import dlfree
from dlfree import threads
dlfree.set_num_threads(2)
threads.parallel_for(2, lambda lo, hi: None)  # the parent's pool now has a worker
pid = os.fork()
if pid == 0:
    idents, barrier = set(), threading.Barrier(2, timeout=10)  # each thread takes a chunk
    threads.parallel_for(2, lambda lo, hi: (idents.add(threading.get_ident()), barrier.wait()))
    os._exit(0 if len(idents) == 2 else 3)
_, status = os.waitpid(pid, 0)
print(json.dumps(os.waitstatus_to_exitcode(status)))
"""
    assert _fresh(code) == 0


@pytest.fixture
def openblas_get():
    """OpenBLAS's get_num_threads, with its thread count at 2 during the test."""
    from dlfree.backends import openblas

    if not openblas.api():
        pytest.skip("NumPy's OpenBLAS cannot be reached here (not Linux, or another BLAS)")
    get, set_ = openblas.api()
    before = get()
    set_(2)
    yield get
    set_(before)


def test_chunks_that_multiply_run_openblas_on_one_thread_each(two_threads, openblas_get):
    seen = []
    threads.parallel_for(2, lambda lo, hi: seen.append(openblas_get()), products=True)
    assert seen == [1, 1] and openblas_get() == 2
    threads.parallel_for(2, lambda lo, hi: seen.append(openblas_get()))  # no products
    assert seen[2:] == [2, 2]


def test_overlapping_regions_restore_openblas_once_the_last_ends(openblas_get):
    from dlfree.backends import openblas

    first, second = openblas.one_thread_each(), openblas.one_thread_each()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert openblas_get() == 1  # the second region still runs
    second.__exit__(None, None, None)
    assert openblas_get() == 2


def test_a_pool_shut_down_meanwhile_runs_the_chunks_inline(two_threads):
    """set_num_threads in another thread may shut the pool down while a call submits."""
    threads.parallel_for(2, lambda lo, hi: None)
    threads._pool.shutdown(wait=True)
    try:
        calls = []
        threads.parallel_for(2, lambda lo, hi: calls.append((lo, hi, threading.get_ident())))
        assert [c[:2] for c in calls] == [(0, 1), (1, 2)]
        assert {c[2] for c in calls} == {threading.get_ident()}
    finally:
        threads._pool = None


def test_numpys_openblas_is_the_one_set_when_scipy_loads_another():
    code = """
import json
import numpy, scipy.linalg  # SciPy's wheels bring an OpenBLAS of their own
from dlfree.backends import openblas
maps = {line.split()[-1] for line in open('/proc/self/maps') if 'openblas' in line.lower()}
print(json.dumps([openblas.library(), sorted(maps), numpy.__file__]))
"""
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("finds the libraries through Linux's /proc/self/maps")
    pytest.importorskip("scipy.linalg")
    chosen, loaded, numpy_file = _fresh(code)
    if chosen is None:
        pytest.skip("NumPy's BLAS here is not an OpenBLAS")
    assert chosen.startswith(os.path.dirname(numpy_file)), (chosen, loaded)
