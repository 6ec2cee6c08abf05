"""Anomaly detection: name the op whose backward first produced a NaN or inf."""

from __future__ import annotations

from .grad_mode import STATE


class detect_anomaly:
    """Inside this block, forward records each op's call site and backward checks every
    gradient; the first non-finite one raises an error naming the op and that call site."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = STATE.anomaly
        STATE.anomaly = self.check_nan
        return self

    def __exit__(self, *exc):
        STATE.anomaly = self._prev
        return False


class set_detect_anomaly(detect_anomaly):
    """Switch anomaly detection on or off at once (and back at the end of a `with`)."""

    def __init__(self, mode: bool):
        super().__init__(mode)
        self._prev = STATE.anomaly
        STATE.anomaly = bool(mode)

    def __enter__(self):
        return self
