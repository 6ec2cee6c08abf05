"""Dtype and device conversion (`to`, `float`, `cpu`, ...), `clone` and `contiguous`."""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ..device import Device
from ..errors import DTypeError
from ..tensor import Tensor
from ._util import tensor_method

__all__ = ["clone"]


class Cast(Function):
    complex_grad = True
    keeps_bfloat16 = False  # the dtype asked for, whatever the input's

    def forward(self, x, dtype):
        self.src = x.dtype
        if x.dtype.kind == "c" and dtype.kind != "c":  # the real part, as torch (no warning)
            x = x.real
        return x.astype(dtype)

    def backward(self, g):
        if g._data.dtype.kind == "c" and self.src.kind != "c":
            from .complex_numbers import real

            g = real(g)
        return (g.to(dtypes.from_np(self.src)),)


class Transfer(Function):
    complex_grad = True

    def forward(self, x, target):
        self.source = self.device
        return target.backend.asarray(self.device.backend.to_numpy(x), index=target.index)

    def backward(self, g):
        return (g.to(self.source),)

    @classmethod
    def move(cls, t: Tensor, target: Device) -> Tensor:
        out = cls.apply(t, target=target)
        out._device = target
        return out


def _parse_to_args(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to(): unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, Device):
            device = a
        elif isinstance(a, str):
            try:
                dtype = dtypes.as_dtype(a)
            except DTypeError:
                if a == "bfloat16":  # a dtype name after all: say what it needs
                    raise
                device = Device(a)
        else:
            dtype = dtypes.as_dtype(a)
    return dtype, device, copy


@tensor_method()
def to(self, *args, **kwargs) -> Tensor:
    """Convert dtype and/or device: `to(dtype)`, `to(device)`, `to(other)`, keywords too."""
    dtype, device, copy = _parse_to_args(args, kwargs)
    out = self
    if device is not None:
        device = Device(device)
        if device is not out._device:
            out = Transfer.move(out, device)
    if dtype is not None:
        np_dtype = dtypes.as_dtype(dtype).np
        if np_dtype != out._data.dtype:
            out._device.backend.check_dtype(np_dtype)
            if out.requires_grad and dtypes.kind(np_dtype) not in "fc":
                out = out.detach()
            out = Cast.apply(out, dtype=np_dtype)
    if copy and out is self:
        out = clone(self)
    return out


def _to_dtype(dtype):
    def convert(self):
        return to(self, dtype)

    convert.__doc__ = f"This tensor as {dtype!r} (itself if it already is)."
    return convert


for _name, _dt in [("float", dtypes.float32), ("double", dtypes.float64),
                   ("half", dtypes.float16), ("long", dtypes.int64), ("int", dtypes.int32),
                   ("short", dtypes.int16), ("char", dtypes.int8), ("byte", dtypes.uint8),
                   ("bool", dtypes.bool_)]:
    setattr(Tensor, _name, _to_dtype(_dt))


@tensor_method()
def bfloat16(self) -> Tensor:
    """This tensor as bfloat16 (itself if it already is); needs ml_dtypes."""
    return to(self, dtypes.bfloat16_dtype())


@tensor_method()
def type_as(self, other: Tensor) -> Tensor:
    return to(self, other.dtype)


TYPE_NAMES = {dtypes.float32: "FloatTensor", dtypes.float64: "DoubleTensor",
              dtypes.float16: "HalfTensor", dtypes.int64: "LongTensor",
              dtypes.int32: "IntTensor", dtypes.int16: "ShortTensor",
              dtypes.int8: "CharTensor", dtypes.uint8: "ByteTensor",
              dtypes.bool_: "BoolTensor"}
"""Each dtype's legacy tensor-type name (torch's `FloatTensor` ...), as `type()` reports."""


@tensor_method("type")
def tensor_type(self, dtype=None, non_blocking: bool = False) -> Tensor | str:
    """With no argument, the name of this tensor's type as torch spells it
    (`"dlfree.FloatTensor"`); with a dtype or such a name (`"torch.LongTensor"` too), this
    tensor converted to it."""
    if dtype is None:
        cuda = "cuda." if self._device.type == "cuda" else ""
        return f"dlfree.{cuda}{TYPE_NAMES[self.dtype]}"
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        by_name = {name: dt for dt, name in TYPE_NAMES.items()}
        short = dtype.rsplit(".", 1)[-1]
        if short not in by_name:
            raise DTypeError(f"type({dtype!r}): unknown tensor type; valid: "
                             f"{', '.join(sorted(by_name))}")
        dtype = by_name[short]
    return to(self, dtype)


@tensor_method()
def pin_memory(self, device=None) -> Tensor:
    """This tensor: dl.free copies to the GPU from ordinary host memory, so pinning is a
    no-op kept for programs (and DataLoader(pin_memory=True)) that ask for it."""
    return self


@tensor_method()
def is_pinned(self, device=None) -> bool:
    """False: dl.free never pins host memory (see `pin_memory`)."""
    return False


@tensor_method()
def cpu(self) -> Tensor:
    return to(self, "cpu")


@tensor_method()
def cuda(self, device=None) -> Tensor:
    return to(self, Device("cuda", device if isinstance(device, int) else None)
              if not isinstance(device, str) else Device(device))


class Clone(Function):
    complex_grad = True

    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return (g,)


@tensor_method()
def clone(input) -> Tensor:
    """A copy with its own memory; gradients flow back to `input`."""
    return Clone.apply(input)


@tensor_method()
def contiguous(self) -> Tensor:
    """This tensor if C-contiguous, else a contiguous copy."""
    return self if self._data.flags.c_contiguous else clone(self)
