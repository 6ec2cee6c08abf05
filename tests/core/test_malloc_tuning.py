"""The NumPy backend's glibc malloc settings: freed array memory stays in the process.

Each case runs in a fresh interpreter, since the settings are process-wide. One workload
frees a batch of 2 MiB arrays (together more than glibc's default trim threshold reaches)
and allocates them again; another is a convolutional network's training step, whose
working set, some 200 MiB, is freed at its end. The page faults they take show whether the
memory was kept.
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

# a conv/batch-norm/ReLU stack's step (forward, backward, SGD) on the public API; it saves
# 8 MiB activations per layer for its backward, all freed when the step ends
TRAINING_STEPS = 3
TRAINING_PROBE = f"""
import resource
import numpy as np
import dlfree as dl
import dlfree.functional as F
from dlfree.backends.numpy_backend import release_memory

rng = np.random.default_rng(0)
x = dl.tensor(rng.standard_normal((64, 32, 32, 32), dtype=np.float32))
labels = dl.tensor(rng.integers(0, 10, 64))
weights = [dl.tensor(rng.standard_normal((32, 32, 3, 3), dtype=np.float32) * 0.05,
                     requires_grad=True) for _ in range(6)]
head = dl.tensor(rng.standard_normal((10, 32), dtype=np.float32) * 0.1, requires_grad=True)

def step():
    h = x
    for w in weights:
        h = F.relu(F.batch_norm(F.conv2d(h, w, padding=1), None, None, training=True))
    loss = F.cross_entropy(h.mean((2, 3)) @ head.T, labels)
    loss.backward()
    with dl.no_grad():
        for p in weights + [head]:
            p -= 0.01 * p.grad
            p.grad = None

step(); step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({TRAINING_STEPS}):
    step()
per_step = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / {TRAINING_STEPS}
rss = lambda: int(open("/proc/self/statm").read().split()[1])
held = rss()
released = release_memory()
print(per_step, held - rss(), released)
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


def _training_probe(**settings) -> tuple:
    """(page faults per steady-state training step, resident pages that release_memory
    handed back, whether it released any)."""
    env = {k: v for k, v in os.environ.items() if k not in MALLOC_VARIABLES}
    env.update(settings, DLFREE_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", TRAINING_PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    return float(out[0]), int(out[1]), out[2] == "True"


# the step's saved activations alone: 6 layers x 3 arrays x 8 MiB, in pages
STEP_PAGES = 6 * 3 * (8 << 20) // PAGE


def test_a_steady_state_training_step_takes_almost_no_page_faults():
    faults, handed_back, released = _training_probe()
    # a step that took its working set back from the OS would fault STEP_PAGES times
    assert faults < STEP_PAGES / 100
    # what the allocator kept goes back to the OS on request
    assert released and handed_back > STEP_PAGES / 2


def test_without_the_tuning_every_training_step_refaults_its_working_set():
    # (less than all of it: the convolutions' columns come from their own scratch pool).
    # On the NumPy kernels: numba's loops allocate too little of this step to show it
    # (no columns, no x - mean), while larger steps still would
    faults, _, _ = _training_probe(DLFREE_MALLOC_TUNING="0", DLFREE_NUMBA="0")
    assert faults > STEP_PAGES / 20
