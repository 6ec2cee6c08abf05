"""`Tensor`: a backend array plus the autograd fields, with PyTorch's names and semantics.

The op methods (`+`, `sum`, `reshape`, ...) are attached by the modules in `dlfree.ops`,
one file per op family; this file holds what every tensor is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .device import CPU, Device
from .errors import AutogradError, DTypeError
from .tracing_state import TRACING

if TYPE_CHECKING:
    from .autograd.function import Function


class Tensor:
    """An n-dimensional array on a device that can record the ops applied to it."""

    __slots__ = ("_data", "_device", "requires_grad", "grad", "grad_fn", "_vc", "_view",
                 "_hooks", "_post_hooks", "__weakref__")
    # The slots' types, for type checkers and tensor.pyi; `_make` is where they are set.
    _data: Any  # the backend array (NumPy or CuPy)
    _device: Device
    requires_grad: bool
    grad: Tensor | None
    grad_fn: Function | None
    _vc: list[int]  # the version counter, one list shared by a tensor and its views
    _view: tuple | None  # (root, replay) for a view, see ops._util.as_view
    _hooks: dict | None  # a leaf's gradient hooks, by handle key
    _post_hooks: dict | None  # a leaf's post-accumulate-grad hooks, by handle key

    # Let Tensor win over NumPy arrays in mixed binary ops (ndarray + Tensor -> Tensor).
    __array_priority__ = 1000

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = False) -> None:
        from .creation import _as_array

        dev = Device(device) if device is not None else None
        array, dev = _as_array(data, dtype, dev, copy=True)
        Tensor._make(array, dev, into=self)
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _make(data, device: Device = CPU, requires_grad: bool = False,
              grad_fn: Function | None = None, into: Tensor | None = None) -> Tensor:
        """Wrap a backend array without copying or checking: the one place a tensor's slots
        are set. `into` is an allocated tensor whose `__init__` is running; without it a new
        Tensor is made (the fast path of every op)."""
        t = _new(Tensor) if into is None else into
        t._data = data
        t._device = device
        t.requires_grad = requires_grad
        t.grad = None
        t.grad_fn = grad_fn
        t._vc = [0]
        t._view = None
        t._hooks = None
        t._post_hooks = None
        return t

    # ----------------------------------------------------------------- properties
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_np(self._data.dtype)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def array(self) -> Any:
        """The backend array itself (NumPy or CuPy), shared, not a copy."""
        return self._data

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's memory, cut from the graph (PyTorch's `.data`)."""
        return Tensor._make(self._data, self._device)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise DTypeError(f".data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device

    @property
    def retains_grad(self) -> bool:
        fn = self.grad_fn
        return fn is not None and "_retain" in (fn.pre_hooks or {})

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self._data.shape[dim]

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    def stride(self, dim: int | None = None) -> Any:
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    def is_floating_point(self) -> bool:
        return dtypes.kind(self._data.dtype) == "f"

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    __hash__ = object.__hash__

    # ------------------------------------------------------------ conversions
    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shared on the CPU, copied from other devices)."""
        if self.requires_grad and not force:
            raise AutogradError(
                "numpy(): can't convert a tensor that requires grad; use tensor.detach().numpy()"
            )
        return self._device.backend.to_numpy(self._data)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        array = self._device.backend.to_numpy(self._data)
        return array if dtype is None else array.astype(dtype, copy=False)

    def item(self) -> Any:
        if TRACING.hook is not None:
            TRACING.hook.python_value(self)
        if self._data.size != 1:
            raise ValueError(
                f"item(): a tensor with {self._data.size} elements cannot be converted to a "
                "Python scalar; valid: tensors with exactly one element"
            )
        return self._device.backend.to_numpy(self._data).reshape(()).item()

    def tolist(self) -> Any:
        return self._device.backend.to_numpy(self._data).tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self._data.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if dtypes.kind(self._data.dtype) not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:  # f"{loss:.4f}", as torch formats a 0-d tensor's value
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"format spec {spec!r} given for a tensor of shape "
                            f"{tuple(self._data.shape)}; only 0-d tensors take one "
                            "(format t.item() or t.tolist())")
        return repr(self)

    def __repr__(self) -> str:
        array = self._device.backend.to_numpy(self._data)
        if dtypes.kind(array.dtype) != array.dtype.kind:  # bfloat16 prints as the floats it holds
            array = array.astype(np.float32)
        body = np.array2string(array, separator=", ", precision=4, prefix="tensor(",
                               threshold=1000, edgeitems=3)
        extras = []
        if self._device.type != "cpu":
            extras.append(f"device='{self._device}'")
        if self._data.dtype not in (dtypes.get_default_dtype().np, np.int64, np.bool_) or \
                array.size == 0:
            extras.append(f"dtype={self.dtype!r}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn={self.grad_fn!r}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extras]) + ")"

    # ------------------------------------------------------------- autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self.grad_fn is not None and not requires_grad:
            raise AutogradError(
                "requires_grad_(False) on a non-leaf tensor; use detach() to cut it from the graph"
            )
        if requires_grad and dtypes.kind(self._data.dtype) != "f":
            raise DTypeError(
                f"only floating-point tensors can require gradients, got {self.dtype!r}; "
                "convert first, e.g. x.float()"
            )
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """The same data with no history; shares memory and the version counter."""
        t = Tensor._make(self._data, self._device)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self.requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (or only into `inputs`)."""
        from .autograd import engine  # autograd builds on this module, not the reverse

        gradients = None if gradient is None else [gradient]
        if inputs is None:
            engine.run_backward([self], gradients, retain_graph, create_graph)
            return
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        grads = engine.run_backward([self], gradients, retain_graph, create_graph, inputs=inputs,
                                    allow_unused=True)
        for t, g in zip(inputs, grads):
            if g is not None:
                engine.accumulate_grad(t, g, create_graph)

    def register_hook(self, hook) -> _HookHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new one."""
        if not self.requires_grad:
            raise AutogradError("cannot register a hook on a tensor that doesn't require grad")
        if self.grad_fn is not None:
            hooks = self.grad_fn.pre_hooks
            if hooks is None:
                hooks = self.grad_fn.pre_hooks = {}
        else:
            if self._hooks is None:
                self._hooks = {}
            hooks = self._hooks
        handle = _HookHandle(hooks)
        hooks[handle.key] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook) -> _HookHandle:
        """Call `hook(tensor)` on this leaf right after backward has added its gradient into
        `.grad`, as soon as the last op feeding it has run (not when the whole backward ends):
        DistributedDataParallel starts a bucket's all-reduce from here. The hook's return
        value is ignored; it may read or modify `tensor.grad` in place."""
        if not self.requires_grad or self.grad_fn is not None:
            what = "has a grad_fn" if self.grad_fn is not None else "does not require grad"
            raise AutogradError("post-accumulate-grad hooks go on leaf tensors that require "
                                f"grad (parameters); this tensor {what}")
        if self._post_hooks is None:
            self._post_hooks = {}
        handle = _HookHandle(self._post_hooks)
        self._post_hooks[handle.key] = hook
        return handle

    def retain_grad(self) -> None:
        """Keep `.grad` on this non-leaf tensor after backward (leaves always keep it)."""
        if not self.requires_grad:
            raise AutogradError("can't retain_grad on a tensor that doesn't require grad")
        if self.grad_fn is None or self.retains_grad:
            return
        import weakref

        from .autograd.grad_mode import STATE

        ref = weakref.ref(self)

        def _retain(grad):
            t = ref()
            if t is not None:
                g = grad.detach() if not STATE.enabled else grad
                t.grad = g.clone() if t.grad is None else t.grad + g
            return None

        if self.grad_fn.pre_hooks is None:
            self.grad_fn.pre_hooks = {}
        self.grad_fn.pre_hooks["_retain"] = _retain


class Size(tuple[int, ...]):
    """A tensor's shape: a tuple of ints, as in PyTorch."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"dlfree.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class _HookHandle:
    """Returned by `register_hook`; `remove()` takes the hook away again."""

    _next_key = 0
    key: int
    _hooks: dict

    def __init__(self, hooks: dict) -> None:
        _HookHandle._next_key += 1
        self.key = _HookHandle._next_key
        self._hooks = hooks

    def remove(self) -> None:
        self._hooks.pop(self.key, None)


class Parameter(Tensor):
    """A tensor that is a model's learnable weight: requires grad and is collected by modules."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty((0,), dtype=dtypes.get_default_dtype().np)
        if isinstance(data, Tensor):  # shares the tensor's memory, as torch's Parameter does
            Tensor._make(data._data, data._device, into=self)
        else:
            super().__init__(data)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


_new = object.__new__
