"""What the profiler records: one `Event` per op call, backward node or range, and the
per-name `EventAverage` rows that `profile.key_averages()` sums them into."""

from __future__ import annotations

KINDS = ("forward", "backward", "range")


class Event:
    """One recorded interval: an op's forward, a backward node, or a `record_function` range.

    Times are `time.perf_counter_ns()` readings; `self_ns` is the duration minus the
    durations of the events recorded inside this one (its children), so the self times of
    all events add up to the time spent inside recorded events, each nanosecond once.
    `self_bytes` is what the event itself allocated (an op's output, a backward node's
    gradients), `total_bytes` adds its children's. Device times (seconds, from CUDA events)
    are None for events that ran on no GPU.
    """

    __slots__ = ("name", "kind", "start_ns", "end_ns", "children_ns", "self_bytes",
                 "children_bytes", "input_shapes", "depth", "parent", "thread",
                 "frame", "cuda_events", "device_time", "children_device_time")

    def __init__(self, name: str, kind: str, depth: int, thread: int):
        self.name = name
        self.kind = kind
        self.depth = depth
        self.thread = thread
        self.start_ns = self.end_ns = 0
        self.children_ns = 0
        self.self_bytes = self.children_bytes = 0
        self.input_shapes = None
        self.parent = None
        self.frame = None
        self.cuda_events = None
        self.device_time = None
        self.children_device_time = None

    @property
    def total_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def self_ns(self) -> int:
        return self.end_ns - self.start_ns - self.children_ns

    @property
    def total_bytes(self) -> int:
        return self.self_bytes + self.children_bytes

    @property
    def self_device_time(self) -> float | None:
        """Device seconds of this event's own kernels (a range launches none itself)."""
        if self.device_time is None:
            return None
        if self.kind == "range":
            return 0.0
        return self.device_time - (self.children_device_time or 0.0)

    def __repr__(self) -> str:
        return (f"<Event {self.kind} {self.name!r} total={self.total_ns / 1e6:.3f} ms "
                f"self={self.self_ns / 1e6:.3f} ms depth={self.depth}>")


class EventAverage:
    """All calls of one name (and kind, and input shapes when grouped by them), summed.

    Times are seconds; `self_memory`/`total_memory` are bytes; `device_time` and
    `self_device_time` are None when none of the calls ran on a GPU.
    """

    __slots__ = ("name", "kind", "input_shapes", "calls", "self_time", "total_time",
                 "self_memory", "total_memory", "self_device_time", "device_time")

    def __init__(self, name: str, kind: str, input_shapes=None):
        self.name, self.kind, self.input_shapes = name, kind, input_shapes
        self.calls = 0
        self.self_time = self.total_time = 0.0
        self.self_memory = self.total_memory = 0
        self.self_device_time = self.device_time = None

    def add(self, event: Event) -> None:
        self.calls += 1
        self.self_time += event.self_ns / 1e9
        self.total_time += event.total_ns / 1e9
        self.self_memory += event.self_bytes
        self.total_memory += event.total_bytes
        if event.device_time is not None:
            self.device_time = (self.device_time or 0.0) + event.device_time
            self.self_device_time = (self.self_device_time or 0.0) + event.self_device_time

    def __repr__(self) -> str:
        return (f"<EventAverage {self.kind} {self.name!r} calls={self.calls} "
                f"self={self.self_time * 1e3:.3f} ms total={self.total_time * 1e3:.3f} ms>")


def key_averages(events, group_by_input_shape: bool = False) -> list[EventAverage]:
    """One row per (name, kind[, input shapes]), in order of first appearance."""
    rows: dict = {}
    for event in events:
        shapes = event.input_shapes if group_by_input_shape else None
        key = (event.name, event.kind, shapes)
        row = rows.get(key)
        if row is None:
            row = rows[key] = EventAverage(event.name, event.kind, shapes)
        row.add(event)
    return list(rows.values())
