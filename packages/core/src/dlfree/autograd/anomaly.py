"""Anomaly detection: name the op whose backward (or, on request, forward) first produced a
NaN or inf, with the element, the shape and the forward call site."""

from __future__ import annotations

import traceback

from ..errors import AutogradError
from .grad_mode import STATE

CHECK_FORWARD = 2
"""`STATE.anomaly` when forward outputs are checked as well as gradients (True: gradients
only): one value, so that an op reads one flag whether detection is off or on."""


def _mode(check_nan: bool, check_forward: bool) -> bool | int:
    if not check_nan:
        return False
    return CHECK_FORWARD if check_forward else True


class detect_anomaly:
    """Inside this block, forward records each op's call site and backward checks every
    gradient; the first non-finite one raises an error naming the op, the element and shape
    of its first NaN/inf and that call site.

    `check_forward=True` also checks each op's forward output as it is computed: the first
    op whose output holds a NaN/inf while all its inputs were finite raises, naming the op,
    the element, the shape and the call. (An op that writes infinities on purpose, such as
    `masked_fill(mask, -inf)` for attention, trips it too: use `dl.finfo(dtype).min`.)"""

    def __init__(self, check_nan: bool = True, check_forward: bool = False):
        self.check_nan = check_nan
        self.check_forward = check_forward

    def __enter__(self):
        self._prev = STATE.anomaly
        STATE.anomaly = _mode(self.check_nan, self.check_forward)
        return self

    def __exit__(self, *exc):
        STATE.anomaly = self._prev
        return False


class set_detect_anomaly(detect_anomaly):
    """Switch anomaly detection on or off at once (and back at the end of a `with`)."""

    def __init__(self, mode: bool, check_nan: bool = True, check_forward: bool = False):
        super().__init__(bool(mode) and check_nan, check_forward)
        self._prev = STATE.anomaly
        STATE.anomaly = _mode(self.check_nan, self.check_forward)

    def __enter__(self):
        return self


def first_non_finite(xp, array) -> tuple[int, str] | None:
    """The flat index of the first NaN/inf in `array` and which it is ("nan" or "inf"), or
    None if every element is finite (or the dtype holds no NaN/inf)."""
    if array.dtype.kind not in "fc" and array.dtype.name != "bfloat16":
        return None
    finite = xp.isfinite(array)
    if bool(finite.all()):
        return None
    index = int(xp.argmin(finite.reshape(-1)))
    value = array.reshape(-1)[index]
    return index, "nan" if bool(xp.isnan(value)) else "inf"


def where_non_finite(found: tuple[int, str], shape) -> str:
    """'inf at element 3 of shape (2, 2)': the words for what `first_non_finite` found."""
    index, kind = found
    return f"{kind} at element {index} of shape {tuple(shape)}"


def check_forward(fn, inputs, out) -> None:
    """Raise if op `fn`'s forward output `out` holds a NaN/inf that its `inputs` (Tensors) did
    not: the op that produced it, the element, the shape and the call site."""
    xp = fn.xp
    found = first_non_finite(xp, out)
    if found is None:
        return
    for t in inputs:
        if first_non_finite(xp, t._data) is not None:
            return  # an earlier op (or the data) brought it in; this op only passed it on
    trace = "".join(traceback.format_stack()[:-3])  # from the op's caller up
    raise AutogradError(
        f"{type(fn).__name__} produced {where_non_finite(found, out.shape)} in its forward "
        f"output, from finite inputs; the call:\n{trace}"
    )
