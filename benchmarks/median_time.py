"""The timing of the stand-alone measurement scripts (conv_paths.py,
elementwise_libraries.py): `make bench`'s workers time their own rounds."""

from __future__ import annotations

import time

import numpy as np


def median_ms(fn, reps: int = 20) -> float:
    """The median time of `fn()` in milliseconds over `reps` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3
