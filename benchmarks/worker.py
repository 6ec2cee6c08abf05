"""A worker process: one framework running one workload, timed on the coordinator's request.

Each framework gets its own process, so that its thread pools (OpenBLAS, OpenMP) and
its allocator never share one with another framework's (see DESIGN.md, "Performance").
"""

from __future__ import annotations

import resource
import statistics
import time

import environment
from workloads import WORKLOADS

# The request for what one step returns (for a workload's `figures`), instead of a count.
OUTPUTS = "outputs"


def serve(conn, workload_name: str, framework: str, settings: dict | None = None) -> None:
    """Build the step, say hello, then answer each request `n` with the median time and
    the page faults per call of `n` calls, and the request OUTPUTS with what one more
    call returns; None stops.

    `settings` overrides the workload module's size constants (`{"BATCH": 64}`) before
    the step is built: the sweep (benchmarks/sweep.py) times one workload at many sizes.
    The hello is {"environment": ...}, or {"unavailable": reason} when the framework
    cannot be imported.
    """
    workload = WORKLOADS[workload_name]
    for name, value in (settings or {}).items():
        setattr(workload, name, value)
    try:
        step = workload.BUILDERS[framework]()
    except ImportError as e:
        conn.send({"unavailable": f"{type(e).__name__}: {e}"})
        return
    library = getattr(workload, "LIBRARIES", {}).get(framework, framework)
    conn.send({"environment": environment.describe(library)})
    # a step that runs elsewhere (an mpiexec job, workloads/ddp_mlp.py) times itself
    # there, and its faults are not this process's
    remote = getattr(step, "median_time", None)
    while (request := conn.recv()) is not None:
        if request == OUTPUTS:
            conn.send(step())
        else:
            conn.send((remote(request), None) if remote else median_time(step, request))
    if hasattr(step, "close"):
        step.close()


def median_time(step, n: int) -> tuple[float, float]:
    """The median wall time of one `step()` over `n` calls, in seconds, and the minor page
    faults per call (memory the allocator took back from the OS and touched again)."""
    clock = time.perf_counter
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        start = clock()
        step()
        times.append(clock() - start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return statistics.median(times), faults / n


def sgemm_gflops(conn, size: int = 2048, repeats: int = 5) -> None:
    """Send the machine's sgemm rate in GFLOP/s: NumPy's own `matmul` of two float32
    (size, size) matrices, the best of `repeats` after one warm-up, in this fresh process
    with the thread settings every worker gets."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), dtype=np.float32) for _ in range(2))
    out = np.empty_like(a)
    np.matmul(a, b, out=out)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - start)
    conn.send(2 * size ** 3 / best / 1e9)
