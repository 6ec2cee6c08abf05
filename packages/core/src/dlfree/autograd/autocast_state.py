"""Autocast's per-thread region settings, which `Function.apply` reads on every call.

Kept apart from the casts (`autocasting.py`), which are themselves a `Function`: this module
needs nothing from autograd, so `function.py` can import it at the top without a circle.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["AUTOCAST", "snapshot", "restored", "use_settings"]


class _AutocastState(threading.local):
    """The autocast settings of one thread (torch keeps them per thread too).

    `on` is what `Function.apply` reads first: False outside every autocast region, so that
    an op pays one attribute read when autocast is not used, and False too while an op
    with a declared policy runs its own inner ops (see `autocast_policy`). `dtypes` maps a
    device type to the NumPy dtype of its lower-precision ops (None: autocast off for that
    type); `default` serves the types it does not name. `cache` holds the casts of leaf
    weights made in the outermost region (`depth` counts the open regions), so that a
    weight used by several ops is cast once per forward.
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
    """The current settings, for `restored` (recomputation replays a forward under them)."""
    return dict(AUTOCAST.dtypes), AUTOCAST.default, AUTOCAST.cache_enabled


@contextlib.contextmanager
def restored(settings: tuple):
    """Run a block under settings taken by `snapshot`, then put the current ones back."""
    before = snapshot()
    use_settings(settings)
    try:
        yield
    finally:
        use_settings(before)


def use_settings(settings: tuple) -> None:
    """Make `settings` (as `snapshot` returns them) the current ones."""
    dtypes_, default, cache_enabled = settings
    AUTOCAST.dtypes, AUTOCAST.default, AUTOCAST.cache_enabled = dict(dtypes_), default, \
        cache_enabled
    AUTOCAST.on = default is not None or any(d is not None for d in dtypes_.values())
