"""Checking and reading one image's detections and ground truths, given as torchmetrics-style
dicts of tensors, arrays or lists (masks also as COCO RLE dicts)."""

from __future__ import annotations

import dlfree as dl
from dlfree.errors import DTypeError, ShapeError

from .masks import mask_stack_from_rles

OP = "MeanAveragePrecision.update"


def check_keys(entry, where: str, required: tuple) -> None:
    """`entry` must be a dict holding every key in `required`."""
    if not isinstance(entry, dict):
        raise TypeError(f"{OP}: {where} must be a dict with keys {', '.join(required)}, got "
                        f"{type(entry).__name__}")
    missing = [key for key in required if key not in entry]
    if missing:
        raise ValueError(f"{OP}: {where} is missing the key(s) {', '.join(map(repr, missing))}; "
                         f"each entry needs {', '.join(required)}")


def device_of(value) -> dl.Device:
    """The device of a tensor or backend array (lists and RLEs live on the CPU)."""
    if isinstance(value, list | tuple):
        return dl.Device("cpu")
    return (value if isinstance(value, dl.Tensor) else dl.as_tensor(value)).device


def masks_tensor(value, where: str, device) -> dl.Tensor:
    """Masks (N, H, W) of bools or 0/1 numbers, or a list of COCO RLE dicts, as a tensor."""
    if isinstance(value, list | tuple) and value and isinstance(value[0], dict):
        return dl.as_tensor(mask_stack_from_rles(value, where), device=device)
    return value if isinstance(value, dl.Tensor) else dl.as_tensor(value)


def vector(array, where: str, length: int | None, dtype: str):
    """A 1-d array of `dtype` ("float64", "int64" or "bool"; the last two accept integers
    and booleans only); an empty input of any shape counts as length 0."""
    if array.size == 0:
        array = array.reshape(0)
    if array.ndim != 1 or (length is not None and array.shape[0] != length):
        wanted = "(N,)" if length is None else f"({length},)"
        raise ShapeError(f"{OP}: {where} must have shape {wanted}, got {tuple(array.shape)}")
    if dtype != "float64" and array.size and array.dtype.kind not in "biu":
        raise DTypeError(f"{OP}: {where} must hold integers, got dtype {array.dtype}")
    return array.astype(dtype, copy=False)


def boxes(array, where: str, length: int):
    """Boxes (length, 4) as float64; an empty input of any shape counts as no boxes."""
    if array.size == 0:
        array = array.reshape(0, 4)
    if array.shape != (length, 4):
        raise ShapeError(f"{OP}: {where} must have shape ({length}, 4) to match the labels, "
                         f"got {tuple(array.shape)}")
    return array.astype("float64")


def masks(array, where: str, length: int):
    """Masks (length, H, W) as booleans; an empty input of any shape counts as no masks."""
    if array.size == 0 and array.ndim != 3:
        array = array.reshape(0, 0, 0)
    if array.ndim != 3 or array.shape[0] != length:
        raise ShapeError(f"{OP}: {where} must have shape ({length}, H, W) to match the labels, "
                         f"got {tuple(array.shape)}")
    return array.astype(bool)
