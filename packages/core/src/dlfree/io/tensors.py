"""Named tensors to and from safetensors files (no pickle: reading never runs code)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import safetensors
import safetensors.numpy

from ..dtypes import BFLOAT16_MISSING
from ..errors import CheckpointError, DTypeError
from ..tensor import Tensor
from . import integrity
from .atomic import atomic_write
from .integrity import DIGEST_KEY, digest
from .limits import check_file, check_safetensors_header


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
    """Write named tensors (and string metadata) to one safetensors file, atomically, with
    the integrity digest (`io.integrity`) that `load_tensors` checks."""
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"save_tensors: metadata must map str to str, got {key!r}: "
                            f"{type(value).__name__}")
    arrays = {name: _host_array(name, value) for name, value in tensors.items()}
    metadata = {k: v for k, v in (metadata or {}).items() if k != DIGEST_KEY}
    metadata[DIGEST_KEY] = digest(metadata, arrays)
    data = safetensors.numpy.save(arrays, metadata=metadata)
    atomic_write(path, data)


def read_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The string metadata of a safetensors file, without reading its tensors (so without
    checking its digest)."""
    check_file(path)
    try:
        with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
            return {k: v for k, v in (f.metadata() or {}).items() if k != DIGEST_KEY}
    except safetensors.SafetensorError as e:
        raise CheckpointError(f"{path} is not a readable safetensors file "
                              f"(corrupt or truncated?): {e}") from None


def load_tensors(path: str | os.PathLike, device=None, verify: bool = True,
                 require_digest: bool = False) -> tuple[dict[str, Tensor], dict]:
    """Read every tensor of a safetensors file onto `device` (the CPU by default);
    returns (tensors by name, metadata). A path that is not a regular file, or a corrupt
    or truncated file, is a `CheckpointError` naming the file; so is data that does not
    match the digest dl.free wrote with it (unless `verify=False`). Files without a digest
    (written by other tools) load unchecked, unless `require_digest`."""
    from ..creation import tensor as make_tensor

    check_safetensors_header(check_file(path))
    try:
        with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
            metadata = dict(f.metadata() or {})
            arrays = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    except TypeError as e:  # NumPy cannot name the dtype: BF16 without ml_dtypes
        if "bfloat16" in str(e):
            raise DTypeError(f"{path} holds bfloat16 (BF16) tensors: {BFLOAT16_MISSING}") from None
        raise CheckpointError(f"{path} is not a readable safetensors file "
                              f"(corrupt or truncated?): {e}") from None
    except Exception as e:  # SafetensorError, and what a hostile header makes NumPy raise
        raise CheckpointError(f"{path} is not a readable safetensors file "
                              f"(corrupt or truncated?): {e}") from None
    metadata = integrity.verify(path, metadata, arrays, required=require_digest, check=verify)
    return {name: make_tensor(a, device=device) for name, a in arrays.items()}, metadata
