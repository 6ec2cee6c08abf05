"""Resource tracking beside the metrics: a timer thread that samples the process's CPU and
memory (psutil), the share of time spent waiting for data, and on the GPU backend CuPy's
memory pool and the device's utilisation (NVML, through nvidia-ml-py, when installed).

The samples are taken off the training thread and handed over at its own pace (`drain`),
so the History is written by the training thread alone. psutil is imported when sampling
starts, not when dlfree.train is.
"""

from __future__ import annotations

import contextlib
import numbers
import sys
import threading
import time

MIB = 2.0 ** 20
# The History names of the sampled values: percentages share one chart in the report and on
# the page ("usage_percent"), sizes another ("memory_mib").
NAMES = {
    "cpu": "usage_percent/cpu",
    "system_memory": "usage_percent/system_memory",
    "data_wait": "usage_percent/data_wait",
    "gpu": "usage_percent/gpu",
    "rss": "memory_mib/rss",
    "rss_peak": "memory_mib/rss_peak",
    "gpu_memory": "memory_mib/gpu",
    "gpu_memory_peak": "memory_mib/gpu_peak",
}


def _peak_rss_bytes() -> int:
    """The process's peak resident size as the OS counts it (0 where it does not)."""
    try:
        import resource
    except ImportError:  # (Windows)
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS: bytes; Linux: KiB


class _GPU:
    """CuPy's default memory pool (bytes in use, and their peak over the samples) and, with
    nvidia-ml-py, the device's utilisation: only when the GPU backend is in use."""

    def __init__(self, index: int):
        self.index = index
        self.peak = 0
        self._nvml = None
        with contextlib.suppress(Exception):  # no nvidia-ml-py, or no driver it can reach
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml = pynvml

    def sample(self) -> dict[str, float]:
        import cupy

        used = cupy.get_default_memory_pool().used_bytes()
        self.peak = max(self.peak, used)
        values = {"gpu_memory": used / MIB, "gpu_memory_peak": self.peak / MIB}
        if self._nvml is not None:
            values["gpu"] = float(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)
        return values

    def close(self) -> None:
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None


def gpu_index(device) -> int | None:
    """The CUDA device index `device` (a dl.free Device, a string or None) names, or None
    when it is not a CUDA device; None with CuPy loaded means device 0 (CuPy's default)."""
    if device is None:
        return 0 if "cupy" in sys.modules else None
    text = str(device)
    if not text.startswith("cuda"):
        return None
    return int(text.partition(":")[2] or 0)


def check_interval(interval) -> float:
    """The sampling interval in seconds, a number > 0."""
    if isinstance(interval, bool) or not isinstance(interval, numbers.Real) or \
            not interval > 0:
        raise ValueError(f"ResourceSampler: interval must be a number of seconds > 0, got "
                         f"{interval!r}")
    return float(interval)


class ResourceSampler:
    """Samples every `interval` seconds on a daemon thread, from `start()` to `stop()`.

    Each sample is (step, {name: value}) with the names of NAMES' keys: "cpu" (process CPU
    %, of one core: above 100 on several), "rss" and "rss_peak" (MiB), "system_memory" (% of
    the machine's memory in use), "data_wait" (% of the wall time since the last sample
    spent waiting for data, from `data_seconds()`, the cumulative seconds, when given), and
    on a CUDA `device` "gpu_memory", "gpu_memory_peak" (MiB in CuPy's pool) and "gpu" (%
    utilisation, with nvidia-ml-py). `step()` gives the step a sample belongs to.
    `on_sample(step, values)` (an attribute too) is called on the sampler's thread;
    `drain()` hands the samples not yet taken to the caller's thread.
    """

    def __init__(self, interval: float = 1.0, *, step=None, data_seconds=None, device=None,
                 on_sample=None):
        self.interval = check_interval(interval)
        self._step = step or (lambda: 0)
        self._data_seconds = data_seconds
        self._device = device
        self.on_sample = on_sample
        self._pending: list[tuple[int, dict[str, float]]] = []
        self._lock = threading.Lock()
        self._sampling = threading.Lock()  # the timer thread and sample_now() take turns
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.latest: dict[str, float] = {}

    def start(self) -> None:
        import psutil

        self._process = psutil.Process()
        self._psutil = psutil
        self._process.cpu_percent(None)  # the first call only sets the zero point
        self._rss_peak = 0
        index = gpu_index(self._device)
        self._gpu = None if index is None else _GPU(index)
        self._last_wall = time.perf_counter()
        self._last_data = self._data_seconds() if self._data_seconds else 0.0
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="dlfree-resources", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample_now()

    def sample_now(self) -> dict[str, float]:
        """Take a sample at once (also what the timer thread does); returns its values."""
        with self._sampling:
            values = self._measure()
        step = self._step()
        with self._lock:
            self._pending.append((step, values))
            self.latest = values
        if self.on_sample is not None:
            self.on_sample(step, values)
        return values

    def _measure(self) -> dict[str, float]:
        rss = self._process.memory_info().rss
        self._rss_peak = max(self._rss_peak, rss, _peak_rss_bytes())
        values = {"cpu": self._process.cpu_percent(None), "rss": rss / MIB,
                  "rss_peak": self._rss_peak / MIB,
                  "system_memory": self._psutil.virtual_memory().percent}
        now = time.perf_counter()
        if self._data_seconds is not None:
            data = self._data_seconds()
            wall = now - self._last_wall
            values["data_wait"] = 100.0 * min(1.0, (data - self._last_data) / wall) \
                if wall > 0 else 0.0
            self._last_data = data
        self._last_wall = now
        if self._gpu is not None:
            values.update(self._gpu.sample())
        return values

    def drain(self) -> list[tuple[int, dict[str, float]]]:
        """The samples taken since the last drain, oldest first."""
        if not self._pending:
            return []
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def stop(self) -> None:
        """Stop the timer thread (waiting for a sample in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._gpu is not None:
            self._gpu.close()
            self._gpu = None


def log_samples(history, samples) -> None:
    """Record `samples` ((step, values) pairs from a sampler) in `history` under NAMES."""
    for step, values in samples:
        for key, value in values.items():
            history.log(NAMES[key], value, step)
