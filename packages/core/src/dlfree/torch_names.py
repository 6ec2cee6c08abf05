"""Names ported torch programs reach for that are spellings of what dl.free has:
`is_tensor`, `numel`, `is_floating_point`, `compile`, the `Tensor.new_*` constructors, and
the legacy typed constructors (`LongTensor([1, 2])`, `FloatTensor(2, 3)`) with their
`isinstance` checks."""

from __future__ import annotations

import numbers

from . import dtypes
from .creation import empty, full, ones, tensor, zeros
from .ops._util import tensor_method
from .ops.cast import TYPE_NAMES
from .tensor import Tensor

__all__ = ["is_tensor", "numel", "is_floating_point", "compile", "FloatTensor",
           "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor"]


def is_tensor(obj) -> bool:
    """True for a dl.Tensor (a Parameter too)."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of `input`."""
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    """True when `input` holds a floating dtype."""
    return input.is_floating_point()


def compile(model=None, **options):
    """torch.compile's spelling: returns `model` itself, so `model = dl.compile(model)` and
    `@dl.compile` / `@dl.compile(mode=...)` run unchanged. dl.free runs eagerly: there is
    no compiler, so the options are accepted and have no effect."""
    if model is None:
        return lambda fn: fn
    return model


def _new_options(self: Tensor, dtype, device) -> dict:
    """torch's `new_*` rule: the new tensor takes this one's dtype and device unless given."""
    return {"dtype": dtype if dtype is not None else self.dtype,
            "device": device if device is not None else self.device}


@tensor_method()
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return zeros(*size, requires_grad=requires_grad, **_new_options(self, dtype, device))


@tensor_method()
def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return ones(*size, requires_grad=requires_grad, **_new_options(self, dtype, device))


@tensor_method()
def new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return empty(*size, requires_grad=requires_grad, **_new_options(self, dtype, device))


@tensor_method()
def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(size, fill_value, requires_grad=requires_grad,
                **_new_options(self, dtype, device))


@tensor_method()
def new_tensor(self, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A copy of `data` with this tensor's dtype and device unless given (torch's rule)."""
    return tensor(data, requires_grad=requires_grad, **_new_options(self, dtype, device))


class _LegacyType(type):
    """The metaclass of the typed constructors: calling one makes a tensor of its dtype,
    and `isinstance(t, dl.LongTensor)` checks a tensor's dtype, as in torch."""

    dtype: dtypes.DType

    def __call__(cls, *args, device=None):
        if args and all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
                        for a in args):
            return zeros(*args, dtype=cls.dtype, device=device)  # FloatTensor(2, 3): a shape
        if len(args) > 1:
            raise TypeError(f"{cls.__name__}(...) takes sizes (ints) or one sequence of "
                            f"data, got {len(args)} arguments")
        return tensor(args[0] if args else [], dtype=cls.dtype, device=device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


def _legacy(dtype: dtypes.DType) -> type:
    name = TYPE_NAMES[dtype]
    doc = (f"`{name}(data)`: a {dtype.name} tensor of `data`; `{name}(*sizes)`: one of that "
           "shape, zero-filled (torch leaves it uninitialised).")
    return _LegacyType(name, (), {"dtype": dtype, "__doc__": doc})


FloatTensor = _legacy(dtypes.float32)
DoubleTensor = _legacy(dtypes.float64)
HalfTensor = _legacy(dtypes.float16)
LongTensor = _legacy(dtypes.int64)
IntTensor = _legacy(dtypes.int32)
ShortTensor = _legacy(dtypes.int16)
CharTensor = _legacy(dtypes.int8)
ByteTensor = _legacy(dtypes.uint8)
BoolTensor = _legacy(dtypes.bool_)
