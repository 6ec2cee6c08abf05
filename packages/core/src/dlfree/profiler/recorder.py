"""The recording hook that `Function.apply` and the backward engine call while profiling."""

from __future__ import annotations

import sys
import threading
from time import perf_counter_ns

from .events import Event

_names: dict = {}  # op class -> event name: the class name lower-cased, as ops name themselves


class _CudaClock:
    """CUDA events on one GPU, and a wait for the work queued on it.

    Waiting at every op boundary makes the host-side times include the GPU work of the op
    they belong to (CuPy launches asynchronously); the CUDA events give the device time
    of the kernels alone, without Python's launch overhead.
    """

    def __init__(self, device):
        self._cuda = device.xp.cuda
        self._device = device

    def synchronize(self) -> None:
        self._device.backend.synchronize(self._device.index)

    def event(self):
        """A CUDA event recorded now on the device's current stream."""
        with self._device.context():
            mark = self._cuda.Event()
            mark.record()
        return mark

    def elapsed(self, start, end) -> float:
        """Seconds between two recorded events (both completed)."""
        return self._cuda.get_elapsed_time(start, end) / 1e3


def _runs_inside(frame, outer) -> bool:
    """Whether `outer` is `frame` or one of the frames that called it (is still running)."""
    while frame is not None:
        if frame is outer:
            return True
        frame = frame.f_back
    return False


def _clock_for(device) -> _CudaClock | None:
    cuda = getattr(device.xp, "cuda", None)
    return _CudaClock(device) if cuda is not None and hasattr(cuda, "Event") else None


class Recorder:
    """The events of one `profile` on one thread, and the stack of the ones still open.

    Each `begin_*` opens an event nested in the innermost open one; its `end_*` closes it
    and adds its duration to the parent's children. An op or backward node that raises
    never reaches its `end_*`: its event remembers the Python frame that opened it
    (`Function.apply`, or the backward engine), and once that frame is no longer running
    the event is dropped, before the next event opens or when an enclosing one closes (its
    time then counts as the parent's own).
    """

    def __init__(self, record_shapes: bool, profile_memory: bool):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.thread = threading.get_native_id()
        self.events: list[Event] = []
        self._stack: list[Event] = []
        self._clocks: dict = {}
        self.start_ns = perf_counter_ns()
        self.end_ns = self.start_ns

    # ----------------------------------------------------------------- the hook's calls
    def begin_op(self, cls, inputs) -> Event:
        """Open the forward event of op class `cls` applied to the tensors `inputs`."""
        name = _names.get(cls)
        if name is None:
            name = _names[cls] = cls.__name__.lower()
        shapes = tuple([tuple(t._data.shape) for t in inputs]) if self.record_shapes else None
        return self._open(name, "forward", shapes, inputs[0]._device if inputs else None)

    def end_op(self, event: Event, out) -> None:
        """Close a forward event; `out` is the array the op returned."""
        if self.profile_memory:
            event.self_bytes = out.nbytes
        self._close(event)

    def begin_backward(self, node, grad) -> Event:
        """Open the event of backward node `node` receiving `grad` (a list for multi-output)."""
        shapes = None
        if self.record_shapes:
            grads = grad if isinstance(grad, list) else [grad]
            shapes = tuple([None if g is None else tuple(g._data.shape) for g in grads])
        return self._open(node.name, "backward", shapes, node.device)

    def end_backward(self, event: Event, grads) -> None:
        """Close a backward event; `grads` are the gradients the node returned."""
        if self.profile_memory:
            event.self_bytes = sum([g._data.nbytes for g in grads if g is not None])
        self._close(event)

    def begin_range(self, name: str) -> Event:
        """Open a `record_function` range."""
        return self._open(name, "range", None, None)

    def end_range(self, event: Event) -> None:
        """Close a `record_function` range."""
        self._close(event)

    # ------------------------------------------------------------------------ internals
    def _open(self, name: str, kind: str, shapes, device) -> Event:
        caller = sys._getframe(2)  # Function.apply, the engine, or record_function.__enter__
        stack = self._stack
        while stack and stack[-1].frame is not None and not _runs_inside(caller, stack[-1].frame):
            stack.pop()  # left open by an exception
        event = Event(name, kind, len(stack), self.thread)
        if kind != "range":  # a range always closes, through its __exit__
            event.frame = caller
        event.input_shapes = shapes
        if stack:
            event.parent = stack[-1]
        stack.append(event)
        if device is not None and device.type != "cpu":
            clock = self._clocks.get(device, False)
            if clock is False:
                clock = self._clocks[device] = _clock_for(device)
            if clock is not None:
                clock.synchronize()  # earlier queued work is not this op's
                event.cuda_events = (clock, clock.event())
        event.start_ns = perf_counter_ns()
        return event

    def _close(self, event: Event) -> None:
        if event.cuda_events is not None:
            clock, start = event.cuda_events
            event.cuda_events = (clock, start, clock.event())
            clock.synchronize()
        now = perf_counter_ns()
        stack = self._stack
        if not stack or stack[-1] is not event:
            if not any(open_event is event for open_event in stack):
                return  # closed out of order after an enclosing event: already dropped
            while stack[-1] is not event:
                stack.pop()
        stack.pop()
        event.frame = None
        event.end_ns = now
        parent = event.parent
        if parent is not None:
            parent.children_ns += now - event.start_ns
            parent.children_bytes += event.self_bytes + event.children_bytes
        self.events.append(event)

    def finish(self) -> None:
        """Stop: drop the events still open and read the device times of the closed ones."""
        self.end_ns = perf_counter_ns()
        self._stack.clear()
        for event in self.events:  # closing order: children before their parents
            if event.cuda_events is not None:
                clock, start, end = event.cuda_events
                event.device_time = clock.elapsed(start, end)
                event.cuda_events = None
            elif event.kind == "range" and event.children_device_time is not None:
                event.device_time = event.children_device_time
            parent = event.parent
            if event.device_time is not None and parent is not None:
                parent.children_device_time = (parent.children_device_time or 0.0) + \
                    event.device_time
