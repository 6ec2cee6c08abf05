"""`dlfree.profiler`: per-op forward and backward times, calls and memory, named ranges,
a text table and a Chrome trace (torch.profiler's user-facing shape, simplified)."""

from .events import Event, EventAverage
from .profile import is_profiling, profile, record_function

__all__ = ["Event", "EventAverage", "is_profiling", "profile", "record_function"]
