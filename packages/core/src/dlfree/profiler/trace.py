"""`profile.export_chrome_trace()`: the events in the Chrome trace event format (Perfetto,
chrome://tracing): one complete ("X") event per recorded interval, times in microseconds."""

from __future__ import annotations

import json
import os

from ..io.atomic import atomic_write


def chrome_trace(events, start_ns: int) -> dict:
    """The trace as a JSON-able dict; `ts` counts from the start of the profile."""
    pid = os.getpid()
    trace = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "dlfree"}}]
    for thread in sorted({e.thread for e in events}):
        trace.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": thread,
                      "args": {"name": f"thread {thread}"}})
    for e in sorted(events, key=lambda e: (e.start_ns, e.depth)):
        args = {"self_us": e.self_ns / 1e3}
        if e.self_bytes or e.children_bytes:
            args["bytes"] = e.self_bytes
            args["total_bytes"] = e.total_bytes
        if e.input_shapes is not None:
            args["input_shapes"] = [None if s is None else list(s) for s in e.input_shapes]
        if e.device_time is not None:
            args["device_us"] = e.device_time * 1e6
            args["self_device_us"] = e.self_device_time * 1e6
        trace.append({"name": e.name, "cat": e.kind, "ph": "X",
                      "ts": (e.start_ns - start_ns) / 1e3, "dur": e.total_ns / 1e3,
                      "pid": pid, "tid": e.thread, "args": args})
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


def write_chrome_trace(path, events, start_ns: int) -> None:
    """Write the trace to `path` atomically: a reader never sees a half-written file."""
    data = json.dumps(chrome_trace(events, start_ns), separators=(",", ":"))
    atomic_write(path, data.encode("utf-8"))
