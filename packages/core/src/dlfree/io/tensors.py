"""Named tensors to and from safetensors files (no pickle: reading never runs code)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import safetensors
import safetensors.numpy

from ..errors import CheckpointError, DTypeError
from ..tensor import Tensor
from .atomic import atomic_write


def _host_array(name: str, value) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value.detach().cpu().numpy()
    elif not isinstance(value, np.ndarray):
        raise TypeError(f"save_tensors: {name!r} is a {type(value).__name__}; expected a "
                        "dl.Tensor or a NumPy array")
    if value.dtype == np.complex128:  # safetensors has C64 but no C128
        raise DTypeError(f"save_tensors: {name!r} is complex128, which safetensors cannot "
                         "store; valid: complex64, or save dl.view_as_real(t) (float64 pairs)")
    return value if value.flags.c_contiguous else value.copy(order="C")  # keeps 0-d shape


def save_tensors(tensors: Mapping[str, Tensor | np.ndarray], path: str | os.PathLike,
                 metadata: Mapping[str, str] | None = None) -> None:
    """Write named tensors (and string metadata) to one safetensors file, atomically."""
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"save_tensors: metadata must map str to str, got {key!r}: "
                            f"{type(value).__name__}")
    arrays = {name: _host_array(name, value) for name, value in tensors.items()}
    data = safetensors.numpy.save(arrays, metadata=dict(metadata) if metadata else None)
    atomic_write(path, data)


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The string metadata of a safetensors file, without reading its tensors."""
    try:
        with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
            return dict(f.metadata() or {})
    except safetensors.SafetensorError as e:
        raise CheckpointError(f"{path} is not a readable safetensors file "
                              f"(corrupt or truncated?): {e}") from None


def load_tensors(path: str | os.PathLike, device=None) -> tuple[dict[str, Tensor], dict]:
    """Read every tensor of a safetensors file onto `device` (the CPU by default);
    returns (tensors by name, metadata). A corrupt or truncated file is a
    `CheckpointError` naming the file."""
    from ..creation import tensor as make_tensor

    try:
        with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
            metadata = dict(f.metadata() or {})
            arrays = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    except safetensors.SafetensorError as e:
        raise CheckpointError(f"{path} is not a readable safetensors file "
                              f"(corrupt or truncated?): {e}") from None
    return {name: make_tensor(a, device=device) for name, a in arrays.items()}, metadata
