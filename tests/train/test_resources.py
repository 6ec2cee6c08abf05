"""Resource sampling: the values against psutil's own reading of this process, the share of
time waiting for data, the timer thread's pace, and on a GPU CuPy's pool and NVML's
utilisation (`gpu`-marked: they skip without CuPy and a GPU that answers)."""

from __future__ import annotations

import threading
import time

from dlfree.train import History
from dlfree.train.resources import NAMES, ResourceSampler, gpu_index, log_samples

import numpy as np
import pytest

from support.devices import cuda_answers

psutil = pytest.importorskip("psutil")


def test_a_sample_reads_this_process_as_psutil_does():
    sampler = ResourceSampler(60.0)
    sampler.start()
    try:
        ballast = np.ones(64 * 2**20 // 8)  # 64 MiB touched: resident
        values = sampler.sample_now()
        rss = psutil.Process().memory_info().rss / 2**20
    finally:
        sampler.stop()
    assert values["rss"] == pytest.approx(rss, abs=8)  # MiB; other threads allocate too
    assert values["rss"] > 64 and values["rss_peak"] >= values["rss"]
    assert values["system_memory"] == pytest.approx(psutil.virtual_memory().percent, abs=5)
    assert values["cpu"] >= 0
    assert "data_wait" not in values and "gpu_memory" not in values
    del ballast


def test_the_data_wait_share_is_the_waited_part_of_the_wall_time():
    waited = [0.0]
    sampler = ResourceSampler(60.0, data_seconds=lambda: waited[0], step=lambda: 7)
    sampler.start()
    try:
        started = time.perf_counter()
        time.sleep(0.2)
        waited[0] = 0.05
        values = sampler.sample_now()
        wall = time.perf_counter() - started
    finally:
        sampler.stop()
    assert values["data_wait"] == pytest.approx(100 * 0.05 / wall, rel=0.1)
    assert sampler.drain() == [(7, values)] and sampler.drain() == []


def test_the_timer_thread_samples_at_its_interval_and_stops():
    seen = []
    arrived = threading.Event()

    def on_sample(step, values):
        seen.append(time.perf_counter())
        if len(seen) == 4:
            arrived.set()

    sampler = ResourceSampler(0.05, on_sample=on_sample)
    sampler.start()
    assert arrived.wait(10)
    sampler.stop()
    count = len(seen)
    time.sleep(0.15)
    assert len(seen) == count  # nothing after stop()
    gaps = np.diff(seen[:4])
    assert all(0.04 < gap < 1.0 for gap in gaps), gaps
    history = History()
    log_samples(history, sampler.drain())
    assert len(history[NAMES["rss"]]) == count and history[NAMES["cpu"]].steps[0] == 0


def test_the_device_decides_whether_the_gpu_is_read():
    assert gpu_index("cpu") is None and gpu_index("cuda:1") == 1 and gpu_index("cuda") == 0
    with pytest.raises(ValueError, match="interval must be a number of seconds > 0"):
        ResourceSampler(-1)


needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(not cuda_answers(),
                                                 reason="CuPy or an NVIDIA GPU is not available")]


@pytest.mark.parametrize("_", [pytest.param(0, marks=needs_gpu)])
def test_gpu_memory_is_cupys_pool_and_its_peak(_):
    import cupy

    pool = cupy.get_default_memory_pool()
    sampler = ResourceSampler(60.0, device="cuda:0")
    sampler.start()
    try:
        block = cupy.ones(32 * 2**20 // 4, dtype=cupy.float32)  # 32 MiB in the pool
        held = sampler.sample_now()
        assert held["gpu_memory"] == pytest.approx(pool.used_bytes() / 2**20)
        assert held["gpu_memory"] >= 32
        del block
        pool.free_all_blocks()
        after = sampler.sample_now()
    finally:
        sampler.stop()
    assert after["gpu_memory"] == pytest.approx(pool.used_bytes() / 2**20)
    assert after["gpu_memory_peak"] >= held["gpu_memory"] > after["gpu_memory"]


@pytest.mark.parametrize("_", [pytest.param(0, marks=needs_gpu)])
def test_gpu_utilisation_is_nvmls_and_rises_under_load(_):
    import cupy

    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    sampler = ResourceSampler(60.0, device="cuda:0")
    sampler.start()
    a = cupy.random.random((4096, 4096), dtype=cupy.float32)
    try:
        busy_until = time.perf_counter() + 1.5
        while time.perf_counter() < busy_until:  # NVML averages over up to the last second
            (a @ a).sum()
            cupy.cuda.Device(0).synchronize()
        values = sampler.sample_now()
    finally:
        sampler.stop()
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        now = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
    finally:
        pynvml.nvmlShutdown()
    assert 0 < values["gpu"] <= 100 and 0 < now <= 100
