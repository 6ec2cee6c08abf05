"""The NumPy backend's glibc malloc settings: freed array memory stays in the process.

Each case runs in a fresh interpreter, since the settings are process-wide. The workload
frees a batch of 2 MiB arrays (together more than glibc's default trim threshold reaches)
and allocates them again; the page faults it takes show whether the memory was kept.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="the malloc settings apply to glibc on Linux only")

ARRAYS, ARRAY_BYTES, ROUNDS = 8, 2 << 20, 10
PAGE = os.sysconf("SC_PAGE_SIZE")
# every round refaults all the arrays when the heap is trimmed; with the settings a round
# reuses warm memory, so allow a small fraction of that for unrelated allocations
REFAULT_PAGES = ROUNDS * ARRAYS * ARRAY_BYTES // PAGE

PROBE = f"""
import resource
import numpy as np
import dlfree
from dlfree.backends.numpy_backend import tune_malloc

def round_trip():
    arrays = [np.ones({ARRAY_BYTES} // 4, dtype=np.float32) for _ in range({ARRAYS})]
    del arrays

round_trip()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({ROUNDS}):
    round_trip()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(tune_malloc(), faults)
"""

MALLOC_VARIABLES = ("DLFREE_MALLOC_TUNING", "GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_",
                    "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def _probe(**settings) -> tuple:
    """(whether tune_malloc applies its settings, page faults of the workload)."""
    env = {k: v for k, v in os.environ.items() if k not in MALLOC_VARIABLES}
    env.update(settings)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()
    return out[0] == "True", int(out[1])


def test_freed_arrays_are_reused_without_page_faults():
    applied, faults = _probe()
    assert applied
    assert faults < REFAULT_PAGES // 20


def test_opting_out_keeps_glibcs_defaults_which_refault_the_memory():
    applied, faults = _probe(DLFREE_MALLOC_TUNING="0")
    assert not applied
    assert faults > REFAULT_PAGES // 2


@pytest.mark.parametrize("settings", [
    {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=4096"},
    {"MALLOC_TRIM_THRESHOLD_": "4096"},
], ids=["GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_"])
def test_a_malloc_setting_in_the_environment_is_left_alone(settings):
    applied, faults = _probe(**settings)
    assert not applied
    assert faults > REFAULT_PAGES // 2
