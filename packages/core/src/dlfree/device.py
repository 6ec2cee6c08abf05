"""Devices: where a tensor's data lives, and the backend that computes on it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .backends import Backend, CupyBackend, NumpyBackend
from .errors import DeviceError

# The device types the core serves itself: asking for one never loads a plugin. The
# backend registry (and so plugin discovery) is consulted only for other device types.
BUILTIN_BACKENDS: dict[str, type[Backend]] = {"cpu": NumpyBackend, "cuda": CupyBackend}
_backends: dict[str, Backend] = {"cpu": NumpyBackend()}
_devices: dict[tuple[str, int], Device] = {}


class Device:
    """A device such as `cpu` or `cuda:0`; equal devices are the same object."""

    __slots__ = ("type", "index", "backend", "xp", "array_type", "context")
    # The slots' types, for type checkers (they are set once, in __new__).
    array_type: type  # the backend's array class, e.g. numpy.ndarray
    type: str
    index: int
    backend: Backend
    xp: Any  # the backend's array module: numpy, cupy
    context: Callable[[], contextlib.AbstractContextManager]  # what ops on it run inside

    def __new__(cls, spec="cpu", index: int | None = None):
        if isinstance(spec, Device):
            return spec
        if not isinstance(spec, str):
            raise DeviceError(f"device must be a string like 'cpu' or 'cuda:0', got {spec!r}")
        kind, _, num = spec.partition(":")
        if num:
            if not num.isdigit():
                raise DeviceError(f"bad device string {spec!r}; expected 'type' or 'type:index'")
            index = int(num)
        key = (kind, index or 0)
        dev = _devices.get(key)
        if dev is not None:
            return dev
        backend = backend_for(kind)
        reason = backend.unavailable_reason() if hasattr(backend, "unavailable_reason") else \
            (None if backend.is_available() else f"backend {backend.name!r} is not available")
        if reason is not None:
            raise DeviceError(f"device {spec!r} is not available: {reason}")
        if key[1] >= backend.device_count():
            raise DeviceError(f"device {kind}:{key[1]} does not exist; "
                              f"{backend.device_count()} {kind} device(s) found")
        dev = object.__new__(cls)
        dev.type, dev.index, dev.backend, dev.xp = kind, key[1], backend, backend.xp
        dev.array_type = backend.array_type
        dev.context = _op_context(backend, key[1])
        _devices[key] = dev
        return dev

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.type == "cpu" else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return "cpu" if self.type == "cpu" else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = Device(other)
            except DeviceError:
                return False
        return self is other

    __hash__ = object.__hash__

    def __reduce__(self):
        return (Device, (str(self),))



def _op_context(backend: Backend, index: int):
    """What ops on this device run inside: CuPy's current device, or silenced NumPy warnings.

    torch never warns on inf/nan results; NumPy would, so its errors are ignored there.
    """
    if hasattr(backend, "context"):
        return lambda: backend.context(index)
    errstate = getattr(backend.xp, "errstate", None)
    return (lambda: errstate(all="ignore")) if errstate else contextlib.nullcontext


def backend_for(kind: str) -> Backend:
    """The backend serving device type `kind`: a built-in one, else a registered one (which
    loads the plugins); raises DeviceError for a type no backend serves."""
    backend = _backends.get(kind)
    if backend is not None:
        return backend
    if kind in BUILTIN_BACKENDS:
        _backends[kind] = BUILTIN_BACKENDS[kind]()
        return _backends[kind]
    from . import registry

    for _, backend_cls in registry.backends.items():
        if backend_cls.device_type == kind:
            _backends[kind] = backend_cls()
            return _backends[kind]
    known = sorted(set(BUILTIN_BACKENDS) | {b.device_type for _, b in registry.backends.items()})
    raise DeviceError(f"unknown device type {kind!r}; known device types: {', '.join(known)}")


def device_of_array(array) -> Device:
    """The device that holds `array` (raises for array types no backend owns)."""
    t = type(array)
    for kind, backend in _backends.items():
        try:
            if t is backend.array_type:
                return Device(kind, backend.device_index(array))
        except ImportError:  # asked for before (cuda without CuPy, say), cannot hold arrays
            continue
    module = t.__module__.partition(".")[0]
    for kind, backend_cls in BUILTIN_BACKENDS.items():  # named after their array module
        if kind not in _backends and module == backend_cls.name:
            return Device(kind, backend_for(kind).device_index(array))
    from . import registry

    for _, backend_cls in registry.backends.items():
        if backend_cls.device_type in _backends:
            continue
        try:
            if t is backend_cls().array_type:
                return Device(backend_cls.device_type, 0)
        except ImportError:
            continue
    raise DeviceError(f"no backend holds arrays of type {t.__module__}.{t.__name__}")


def register_backend(backend: Backend) -> None:
    """Make `backend` serve devices of type `backend.device_type` (tests, notebooks)."""
    _backends[backend.device_type] = backend


CPU = Device("cpu")
