"""The live dashboard: `Monitor` (for any training loop) with its event log, HTTP server
and page; the Trainer's callback on top of it is `dlfree.train.callbacks.Dashboard`."""

from .events import EventLog
from .monitor import Monitor
from .server import DashboardServer

__all__ = ["Monitor", "EventLog", "DashboardServer"]
