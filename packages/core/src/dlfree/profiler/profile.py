"""`profile`: record what runs on this thread; `record_function`: name a range of it."""

from __future__ import annotations

import functools

from ..autograd.function import PROFILING
from .events import Event, EventAverage, key_averages
from .recorder import Recorder
from .table import check_sort, format_table
from .trace import write_chrome_trace


class profile:
    """Record every op's forward, every backward node and every `record_function` range run
    on this thread inside the `with` block: calls, total and self time (self excludes the
    recorded events nested inside), and bytes allocated (an op's output array, a backward
    node's gradient arrays).

        with dlfree.profiler.profile() as prof:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
        print(prof.table(sort_by="self_time", row_limit=10))
        prof.export_chrome_trace("step.json")   # open in https://ui.perfetto.dev

    Forward events are named after the op (`linear`, `relu`), backward events after the
    node (`LinearBackward`). Results are read after the block.

    Threads: recording is per thread. Only the thread that entered the profile is recorded
    (ops of DataLoader workers or other threads are not), and each thread can run a profile
    of its own at the same time.

    GPU (CuPy): CuPy queues kernels and returns at once, so the profiler waits for the
    device (synchronizes) at the start and end of every op and backward node on a GPU. The
    host-side self and total times then include the GPU work of the op they belong to, and
    the table still adds up to the wall time; work queued outside ops counts towards the
    next op. Each such event also records a pair of CUDA events (`cupy.cuda.Event`) whose
    elapsed time is the device time of its kernels alone (the `Device self/total ms`
    columns, `device_time` on rows). Waiting makes a profiled GPU run slower than an
    unprofiled one; the relative costs are what the table is for.
    """

    def __init__(self, record_shapes: bool = False, profile_memory: bool = True):
        for name, value in (("record_shapes", record_shapes),
                            ("profile_memory", profile_memory)):
            if not isinstance(value, bool):
                raise TypeError(f"profile: {name} must be True or False, got {value!r}")
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self._recorder: Recorder | None = None
        self._done = False

    def __enter__(self) -> profile:
        if PROFILING.hook is not None:
            raise RuntimeError("profile: another profile is already recording on this thread; "
                               "use one profile and nest record_function ranges inside it")
        self._done = False
        self._recorder = Recorder(self.record_shapes, self.profile_memory)
        PROFILING.hook = self._recorder
        return self

    def __exit__(self, *exc) -> bool:
        PROFILING.hook = None
        self._recorder.finish()
        self._done = True
        return False

    def _results(self) -> Recorder:
        if not self._done:
            state = "is still recording" if self._recorder is not None else "has not run"
            raise RuntimeError(f"profile: the profile {state}; read its results after the "
                               "`with profile() as prof:` block")
        return self._recorder

    @property
    def wall_time(self) -> float:
        """Seconds from entering the `with` block to leaving it."""
        recorder = self._results()
        return (recorder.end_ns - recorder.start_ns) / 1e9

    def events(self) -> list[Event]:
        """Every recorded event in order of start (a parent before the events inside it)."""
        return sorted(self._results().events, key=lambda e: (e.start_ns, e.depth))

    def key_averages(self, group_by_input_shape: bool = False) -> list[EventAverage]:
        """One row per name and kind (and input shapes, when grouped by them), summed over
        calls, in order of first start."""
        if group_by_input_shape and not self.record_shapes:
            raise ValueError("key_averages: group_by_input_shape=True needs input shapes, "
                             "which this profile did not record; use "
                             "profile(record_shapes=True)")
        return key_averages(self.events(), group_by_input_shape)

    def table(self, sort_by: str = "self_time", row_limit: int | None = 20) -> str:
        """The rows of `key_averages()` as text, sorted by `sort_by` (descending): one of
        "self_time", "total_time", "calls", "memory" (self bytes), "total_memory",
        "self_device_time", "device_time". Percentages are of the profiled wall time;
        after the rows come the time spent outside every recorded event and the total."""
        check_sort(sort_by, row_limit, self.profile_memory)
        events = self._results().events
        attributed = sum([e.self_ns for e in events]) / 1e9
        return format_table(self.key_averages(self.record_shapes), self.wall_time, attributed,
                            sort_by, row_limit, self.profile_memory, self.record_shapes)

    def export_chrome_trace(self, path) -> None:
        """Write the events to `path` as Chrome trace JSON (Perfetto and chrome://tracing
        load it), atomically: the file is complete or untouched."""
        recorder = self._results()
        write_chrome_trace(path, recorder.events, recorder.start_ns)


def is_profiling() -> bool:
    """Whether a `profile` is recording on this process now (code that marks its own
    ranges, such as a graph's steps, takes a slower, annotated path only then)."""
    return PROFILING.hook is not None


class record_function:
    """A named range: a context manager or a function decorator. Inside a `profile` it is
    an event of kind "range" in the table and the trace, and the ops run inside it nest
    under it; outside any profile it does nothing.

        with record_function("data"):
            x, y = next(batches)

        @record_function("optimizer_step")
        def step(): ...

    One `record_function` object belongs to one thread at a time; the decorator opens a
    fresh range per call, so a decorated function may run on several threads.
    """

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        if not name:
            raise ValueError("record_function: name must be a non-empty str, got ''")
        self.name = name
        self._open: list = []  # (recorder, event) per nested `with` of this object

    def __enter__(self) -> record_function:
        recorder = PROFILING.hook
        self._open.append(None if recorder is None else (recorder, recorder.begin_range(self.name)))
        return self

    def __exit__(self, *exc) -> bool:
        opened = self._open.pop()
        if opened is not None:
            recorder, event = opened
            recorder.end_range(event)
        return False

    def __call__(self, fn):
        name = self.name

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(name):
                return fn(*args, **kwargs)

        return wrapper
