"""A worker process: one framework running one workload, timed on the coordinator's request.

Each framework gets its own process, so that its thread pools (OpenBLAS, OpenMP) and
its allocator never share one with another framework's (see DESIGN.md, "Performance").
"""

from __future__ import annotations

import statistics
import time

import environment
from workloads import WORKLOADS


def serve(conn, workload_name: str, framework: str, settings: dict | None = None) -> None:
    """Build the step, say hello, then answer each request `n` with a median; None stops.

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
    # a step that runs elsewhere (an mpiexec job, workloads/ddp_mlp.py) times itself there
    timed = getattr(step, "median_time", None) or (lambda n: median_time(step, n))
    while (n := conn.recv()) is not None:
        conn.send(timed(n))
    if hasattr(step, "close"):
        step.close()


def median_time(step, n: int) -> float:
    """The median wall time of one `step()` over `n` calls, in seconds."""
    clock = time.perf_counter
    times = []
    for _ in range(n):
        start = clock()
        step()
        times.append(clock() - start)
    return statistics.median(times)
