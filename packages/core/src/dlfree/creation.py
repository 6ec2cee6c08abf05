"""Tensor factories: `tensor`, `zeros`, `arange`, `randn`, ... and their `*_like` forms."""

from __future__ import annotations

import numbers

import numpy as np

from . import dtypes
from .device import CPU, Device, device_of_array
from .errors import DTypeError, ShapeError
from .random import rng
from .tensor import Tensor

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange",
    "linspace", "eye", "rand", "randn", "randint", "randperm", "normal", "zeros_like",
    "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
]


def _infer_np_dtype(data, array: np.ndarray):
    """PyTorch's inference: Python floats become the default dtype, arrays keep theirs."""
    if isinstance(data, np.ndarray | np.generic):
        return array.dtype
    if dtypes.kind(array.dtype) == "f":
        return dtypes.get_default_dtype().np
    if array.dtype.kind == "c":  # Python complex numbers: the default float's complex dtype
        return dtypes.as_dtype(complex).np
    if array.dtype.kind in "iu":
        return np.dtype(np.int64)
    return array.dtype


def _as_array(data, dtype, device: Device | None, copy: bool):
    """Convert user data to a backend array on `device`; returns (array, device)."""
    if isinstance(data, Tensor):
        src_dev = data._device
        array = data._data
        dev = device or src_dev
        if dev is not src_dev:
            array = dev.backend.asarray(src_dev.backend.to_numpy(array), index=dev.index)
            copy = False
        np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else array.dtype
        array = array.astype(np_dtype, copy=copy)
        return array, dev
    if device is None and not isinstance(data, np.ndarray | list | tuple | numbers.Number):
        try:
            dev = device_of_array(data)
        except Exception:  # not a backend array; let NumPy try to read it below
            dev = CPU
    else:
        dev = device or CPU
    if isinstance(data, dev.backend.array_type):
        array = data
    else:
        try:
            array = np.asarray(data)
        except ValueError as e:
            raise ShapeError(f"tensor(): cannot build a tensor from ragged data: {e}") from None
        if array.dtype == object or dtypes.kind(array.dtype) not in "biufc":
            raise DTypeError(
                f"tensor(): cannot build a tensor from {type(data).__name__} of element type "
                f"{array.dtype}; valid: numbers, nested lists of numbers, arrays"
            )
    np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else _infer_np_dtype(data, array)
    dtypes.from_np(np.dtype(np_dtype))  # rejects unsupported dtypes with a clear error
    if isinstance(array, dev.backend.array_type):
        array = array.astype(np_dtype, copy=copy)
    else:
        array = dev.backend.asarray(np.asarray(array, dtype=np_dtype), index=dev.index)
    return array, dev


def _finish(array, device: Device, requires_grad: bool) -> Tensor:
    t = Tensor._make(array, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _place(np_array, device) -> tuple:
    dev = Device(device) if device is not None else CPU
    if dev is not CPU:
        np_array = dev.backend.asarray(np_array, index=dev.index)
    return np_array, dev


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, numbers.Integral) or isinstance(s, bool) or s < 0:
            raise ShapeError(f"sizes must be non-negative integers, got {tuple(size)}")
    return tuple(int(s) for s in size)


def _float_dtype(dtype):
    return dtypes.as_dtype(dtype).np if dtype is not None else dtypes.get_default_dtype().np


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (numbers, nested lists, arrays or a tensor)."""
    array, dev = _as_array(data, dtype, Device(device) if device is not None else None, True)
    return _finish(array, dev, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like `tensor`, but shares memory with `data` when dtype and device already match."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    array, dev = _as_array(data, dtype, Device(device) if device is not None else None, False)
    return Tensor._make(array, dev)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise DTypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dtypes.from_np(array.dtype)
    return Tensor._make(array, CPU)


def _filled(size, value, dtype, device, requires_grad, np_dtype_default) -> Tensor:
    np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else np_dtype_default
    dev = Device(device) if device is not None else CPU
    dev.backend.check_dtype(np_dtype)
    array = dev.xp.full(_size(size), value, dtype=np_dtype) if value is not None else \
        dev.xp.empty(_size(size), dtype=np_dtype)
    return _finish(array, dev, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _filled(size, 0, dtype, device, requires_grad, _float_dtype(None))


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _filled(size, 1, dtype, device, requires_grad, _float_dtype(None))


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _filled(size, None, dtype, device, requires_grad, _float_dtype(None))


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = dtypes.result_type(fill_value)
    return _filled((size,) if isinstance(size, int) else tuple(size), fill_value, dtype,
                   device, requires_grad, default)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    is_float = any(isinstance(v, float) for v in (start, end, step))
    np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else (
        dtypes.get_default_dtype().np if is_float else np.dtype(np.int64))
    # PyTorch computes the length in double precision, then the values as start + i*step
    n = max(0, int(np.ceil((end - start) / step)))
    values = start + np.arange(n, dtype=np.float64 if is_float else np.int64) * step
    array, dev = _place(values.astype(np_dtype), device)
    return _finish(array, dev, requires_grad)


def linspace(start, end, steps: int, dtype=None, device=None, requires_grad=False) -> Tensor:
    if steps < 0:
        raise ValueError(f"linspace: steps must be non-negative, got {steps}")
    array, dev = _place(np.linspace(start, end, steps).astype(_float_dtype(dtype)), device)
    return _finish(array, dev, requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad=False) -> Tensor:
    array, dev = _place(np.eye(n, m, dtype=_float_dtype(dtype)), device)
    return _finish(array, dev, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples on [0, 1)."""
    np_dtype = _float_dtype(dtype)
    values = rng(generator).random(_size(size), dtype=np.float64).astype(np_dtype)
    array, dev = _place(values, device)
    return _finish(array, dev, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples."""
    np_dtype = _float_dtype(dtype)
    values = rng(generator).standard_normal(_size(size), dtype=np.float64).astype(np_dtype)
    array, dev = _place(values, device)
    return _finish(array, dev, requires_grad)


def randint(low, high=None, size=(), generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers drawn uniformly from [low, high), with torch's overloads: `randint(high)`,
    `randint(high, size)`, `randint(low, high, size)`."""
    if isinstance(high, tuple | list):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: need low < high, got low={low}, high={high}")
    np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else np.dtype(np.int64)
    values = rng(generator).integers(low, high, size=_size(tuple(size)), dtype=np.int64)
    array, dev = _place(values.astype(np_dtype), device)
    return _finish(array, dev, requires_grad)


def randperm(n: int, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else np.dtype(np.int64)
    array, dev = _place(rng(generator).permutation(n).astype(np_dtype), device)
    return _finish(array, dev, requires_grad)


def normal(mean=0.0, std=1.0, size=None, generator=None, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """Normal samples; `mean`/`std` may be tensors (broadcast) or numbers with `size`."""
    means = mean._data if isinstance(mean, Tensor) else mean
    stds = std._data if isinstance(std, Tensor) else std
    if size is None:
        size = np.broadcast_shapes(np.shape(means), np.shape(stds))
    if isinstance(mean, Tensor) and dtype is None:
        dtype = mean.dtype
    np_dtype = _float_dtype(dtype)
    draws = rng(generator).standard_normal(tuple(size), dtype=np.float64)
    values = (np.asarray(means, dtype=np.float64) + np.asarray(stds, dtype=np.float64) * draws)
    array, dev = _place(values.astype(np_dtype), device)
    return _finish(array, dev, requires_grad)


def _like(fn, t: Tensor, dtype, device, requires_grad, **kw) -> Tensor:
    return fn(*t.shape, dtype=dtype if dtype is not None else t.dtype,
              device=device if device is not None else t.device, requires_grad=requires_grad,
              **kw)


def zeros_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(zeros, t, dtype, device, requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(ones, t, dtype, device, requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(empty, t, dtype, device, requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype if dtype is not None else t.dtype,
                device=device if device is not None else t.device, requires_grad=requires_grad)


def rand_like(t, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(rand, t, dtype, device, requires_grad, generator=generator)


def randn_like(t, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(randn, t, dtype, device, requires_grad, generator=generator)


def randint_like(t, low, high=None, generator=None, dtype=None, device=None,
                 requires_grad=False) -> Tensor:
    return randint(low, high, tuple(t.shape), generator=generator,
                   dtype=dtype if dtype is not None else t.dtype,
                   device=device if device is not None else t.device, requires_grad=requires_grad)

