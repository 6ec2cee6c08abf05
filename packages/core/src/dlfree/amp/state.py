"""Per-thread autocast settings, which the ops autocast covers read at their entry."""

from __future__ import annotations

import contextlib
import threading


class _AutocastState(threading.local):
    """The autocast settings of one thread (torch keeps them per thread too).

    `on` is what an op reads first: False outside every autocast region, so that ops pay
    one attribute read when autocast is not used. `dtypes` maps a device type to the NumPy
    dtype of its lower-precision ops (None: autocast off for that type); `default` serves
    the types it does not name. `cache` holds the casts of leaf weights made in the
    outermost region (`depth` counts the open regions), so that a weight used by several
    ops is cast once per forward.
    """

    def __init__(self):
        self.on = False
        self.dtypes: dict = {}
        self.default = None
        self.cache_enabled = True
        self.cache: dict = {}
        self.depth = 0

    def lower_dtype(self, device_type: str):
        """The NumPy dtype autocast gives lower-precision ops on `device_type`, or None."""
        return self.dtypes.get(device_type, self.default)


AUTOCAST = _AutocastState()


def snapshot() -> tuple:
    """The current settings, for `restored` (checkpoint replays a forward under them)."""
    return dict(AUTOCAST.dtypes), AUTOCAST.default, AUTOCAST.cache_enabled


@contextlib.contextmanager
def restored(settings: tuple):
    """Run a block under settings taken by `snapshot`, then put the current ones back."""
    before = snapshot()
    apply(settings)
    try:
        yield
    finally:
        apply(before)


def apply(settings: tuple) -> None:
    """Make `settings` (as `snapshot` returns them) the current ones."""
    dtypes, default, cache_enabled = settings
    AUTOCAST.dtypes, AUTOCAST.default, AUTOCAST.cache_enabled = dict(dtypes), default, \
        cache_enabled
    AUTOCAST.on = default is not None or any(d is not None for d in dtypes.values())
