"""The dashboard's event log: every update of a run (a logged value, the progress, a
resource sample, a note) as a numbered event, kept so that a page opened late can be sent
everything at once and a reconnecting page can resume after the last event it saw.

Appending is all the training loop pays: an event is a small dict put on a list under a
lock. Nothing is encoded until a page asks for it (`sse_message`, on the server's thread).
"""

from __future__ import annotations

import json
import math
import threading

# The kinds of event, in the order a page usually first sees them.
KINDS = ("config", "point", "progress", "resources", "note", "end")


class EventLog:
    """A thread-safe, append-only list of events numbered from 1 (`id`), which readers can
    wait on. `close()` marks the end of the run: waiting readers wake and stop after the
    events still unread.

    A point (one logged value; most of a long run's events) is kept as a bare tuple, not a
    dict, and made an event dict only when read: a million-step run holds a million of
    them for the page that may open late."""

    def __init__(self):
        self._events: list = []
        self._changed = threading.Condition()
        self.closed = False

    def __len__(self) -> int:
        return len(self._events)

    def append(self, kind: str, **data) -> int:
        """Add an event of `kind` (one of KINDS) with `data`; returns its id."""
        if kind not in KINDS:
            raise ValueError(f"EventLog.append: kind must be one of {', '.join(KINDS)}, got "
                             f"{kind!r}")
        return self._add(data if kind != "point" else
                         (data["name"], data["step"], data["value"]), kind)

    def point(self, name: str, step: int, value: float) -> int:
        """Add the point event of `value` logged under `name` at `step`; returns its id."""
        return self._add((name, step, value), "point")

    def _add(self, item, kind: str) -> int:
        with self._changed:
            if self.closed:
                raise RuntimeError("EventLog.append: the run has ended (the log is closed)")
            self._events.append(item if kind == "point" else (kind, item))
            self._changed.notify_all()
            return len(self._events)

    def after(self, last_id: int) -> list[dict]:
        """The events with an id above `last_id` (all of them for 0)."""
        with self._changed:
            items = self._events[max(0, last_id):]
        return _as_events(items, max(0, last_id) + 1)

    def wait_after(self, last_id: int, timeout: float) -> list[dict]:
        """The events after `last_id`, waiting up to `timeout` seconds for one when there is
        none yet; an empty list means none came in time, or the log closed."""
        with self._changed:
            self._changed.wait_for(lambda: self.closed or len(self._events) > last_id,
                                   timeout)
            items = self._events[max(0, last_id):]
        return _as_events(items, max(0, last_id) + 1)

    def close(self) -> None:
        """End the log; appending afterwards is an error, reading still works."""
        with self._changed:
            self.closed = True
            self._changed.notify_all()


def _as_events(items: list, first_id: int) -> list[dict]:
    events = []
    for event_id, item in enumerate(items, first_id):
        if len(item) == 3:  # a point: (name, step, value)
            events.append({"id": event_id, "kind": "point", "name": item[0],
                           "step": item[1], "value": item[2]})
        else:
            events.append({"id": event_id, "kind": item[0], **item[1]})
    return events


def strict(value):
    """`value` with each NaN and infinity (in dicts and lists too) as None, which strict
    JSON, and so a browser's JSON.parse, can read."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [strict(item) for item in value]
    return value


def event_json(event: dict) -> str:
    """An event as strict JSON (non-finite numbers become null)."""
    return json.dumps(strict(event), separators=(",", ":"), default=str, allow_nan=False)


def sse_message(event: dict) -> str:
    """An event framed as one Server-Sent Events message: its id (what a reconnecting page
    sends back as Last-Event-ID) and its JSON as the data."""
    return f"id: {event['id']}\ndata: {event_json(event)}\n\n"
