"""Whether operations record the graph: `no_grad`, `enable_grad`, `set_grad_enabled`."""

from __future__ import annotations

import functools
import threading


class _State(threading.local):
    """Per-thread autograd switches (PyTorch keeps grad mode per thread too)."""

    enabled = True
    anomaly: bool | int = False  # True: check backward; anomaly.CHECK_FORWARD: forward too
    quiet = False  # True while floating-point warnings are already silenced (in backward)
    backward = False  # True while the engine runs backward (autocast leaves dtypes alone)


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.enabled


class _GradMode:
    """Base of the grad-mode switches: a context manager and a function decorator."""

    _mode: bool

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode
        return self

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = STATE.enabled
            STATE.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.enabled = prev

        return wrapper


class no_grad(_GradMode):
    """Do not record operations: results have no `grad_fn` and do not require grad."""

    _mode = False


class enable_grad(_GradMode):
    """Record operations again inside a `no_grad` region."""

    _mode = True


class set_grad_enabled(_GradMode):
    """Turn recording on or off; takes effect at once, or for a `with` block."""

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self._mode

    def __enter__(self):
        return self

    def __call__(self, fn):
        STATE.enabled = self._prev
        return super().__call__(fn)
