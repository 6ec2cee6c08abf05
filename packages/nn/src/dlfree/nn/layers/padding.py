"""Padding layers, as torch.nn: `ZeroPad`, `ConstantPad`, `ReflectionPad`, `ReplicationPad`
and `CircularPad`, each for the last 1, 2 or 3 dims, all through `F.pad`."""

from __future__ import annotations

import numbers

from dlfree import functional as F

from ..module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _Pad(Module):
    """`padding` is an int (every side) or 2 * dims ints, (left, right) of the last dim
    first, as F.pad takes them."""

    dims: int
    mode: str

    def __init__(self, padding):
        super().__init__()
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            padding = (int(padding),) * (2 * self.dims)
        padding = tuple(padding)
        if len(padding) != 2 * self.dims or not all(
                isinstance(p, numbers.Integral) for p in padding):
            raise ValueError(f"{type(self).__name__}: padding must be an int or "
                             f"{2 * self.dims} ints, got {padding!r}")
        self.padding = padding

    def forward(self, input):
        return F.pad(input, self.padding, mode=self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_Pad):
    mode = "constant"

    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, mode="constant", value=self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_ConstantPad):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _family(base: type, kind: str, what: str, **attributes) -> list[type]:
    made = []
    for d in (1, 2, 3):
        doc = (f"Pads the last {d} dim{'s' if d > 1 else ''} of the input {what}; `padding` "
               f"is an int or {2 * d} ints (left, right of the last dim first).")
        made.append(type(f"{kind}Pad{d}d", (base,), {"dims": d, "__doc__": doc,
                                                     "__module__": __name__, **attributes}))
    return made


ZeroPad1d, ZeroPad2d, ZeroPad3d = _family(_ZeroPad, "Zero", "with zeros")
ConstantPad1d, ConstantPad2d, ConstantPad3d = _family(_ConstantPad, "Constant",
                                                      "with `value`")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _family(
    _Pad, "Reflection", "with its reflection at the border (the border not repeated)",
    mode="reflect")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _family(
    _Pad, "Replication", "by repeating the border values", mode="replicate")
CircularPad1d, CircularPad2d, CircularPad3d = _family(
    _Pad, "Circular", "by wrapping around (the other side's values)", mode="circular")
