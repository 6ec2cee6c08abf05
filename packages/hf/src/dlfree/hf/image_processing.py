"""The image processor of ViT-style checkpoints, on NumPy: resize, rescale and normalise as
`preprocessor_config.json` says, giving the `pixel_values` the model takes.

Resizing reproduces Pillow's (which transformers' CPU image processor calls) for 8-bit
images: a separable filter whose support widens with the downscale factor (so it
antialiases), its weights in 22-bit fixed point, rounded to 8 bits after each pass, the
passes in Pillow 13's order. The same images therefore give the same pixel values (with
an older Pillow, which always resized horizontally first, some pixels differ by one level).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import dlfree as dl

import numpy as np

from .hub import resolve_folder
from .tokenizer import _read_json

__all__ = ["ViTImageProcessor", "AutoImageProcessor", "IMAGE_PROCESSOR_FILE", "RESAMPLE"]

IMAGE_PROCESSOR_FILE = "preprocessor_config.json"
_PRECISION_BITS = 22  # Pillow's 8-bit resampling: 32 bits - 8 for the pixel - 2 for sign


def _bilinear(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic(x: np.ndarray) -> np.ndarray:
    a, x = -0.5, np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


# PIL's resampling codes (preprocessor_config.json's "resample"): (filter, its support)
RESAMPLE = {2: ("bilinear", _bilinear, 1.0), 3: ("bicubic", _bicubic, 2.0)}


def _weights(size_in: int, size_out: int, resample: int) -> np.ndarray:
    """(size_out, size_in) fixed-point weights of one resampling pass, as Pillow computes
    them (its precompute_coeffs and normalize_coeffs_8bpc)."""
    _, kernel, support = RESAMPLE[resample]
    scale = size_in / size_out
    stretch = max(scale, 1.0)
    support *= stretch
    weights = np.zeros((size_out, size_in))
    for out in range(size_out):
        center = (out + 0.5) * scale
        first = max(int(center - support + 0.5), 0)
        last = min(int(center + support + 0.5), size_in)
        taps = kernel((np.arange(first, last) - center + 0.5) / stretch)
        total = taps.sum()
        weights[out, first:last] = taps / total if total != 0.0 else taps
    scaled = weights * (1 << _PRECISION_BITS)
    return np.trunc(np.where(scaled < 0, scaled - 0.5, scaled + 0.5))


def _resample_pass(image: np.ndarray, weights: np.ndarray, axis: int) -> np.ndarray:
    """One pass along `axis` of a (channels, height, width) 8-bit image: fixed-point sums,
    rounded and clipped to 0..255. The float64 products and sums stay below 2**53, so they
    are the exact integers Pillow adds up."""
    moved = np.moveaxis(image.astype(np.float64), axis, -1)
    sums = moved @ weights.T + (1 << (_PRECISION_BITS - 1))
    result = np.clip(np.floor(sums / (1 << _PRECISION_BITS)), 0, 255)
    return np.moveaxis(result, -1, axis)


def resize(image: np.ndarray, height: int, width: int, resample: int = 2) -> np.ndarray:
    """A (channels, height, width) uint8 image resized as Pillow's Image.resize does;
    returned as uint8. Pillow (>= 13) runs the vertical pass first when the height shrinks
    by more than twice as many pixels as the width does, else the horizontal one; the
    rounding between the passes makes the order visible."""
    if resample not in RESAMPLE:
        raise ValueError(f"resize: resample={resample!r} is not supported; dl.free implements "
                         + ", ".join(f"{code} ({name})" for code, (name, _, _) in RESAMPLE.items()))
    _, rows, cols = image.shape
    passes = [(2, cols, width), (1, rows, height)]
    if height < rows and rows - height > 2 * (cols - width):
        passes.reverse()
    for axis, size_in, size_out in passes:
        if size_in != size_out:
            image = _resample_pass(image, _weights(size_in, size_out, resample), axis=axis)
    return image.astype(np.uint8)


def _channels_first(image, index: int) -> np.ndarray:
    array = np.asarray(image)
    if array.dtype != np.uint8:
        raise TypeError(f"image {index}: the image processor takes 8-bit images (uint8 arrays, "
                        f"or Pillow images), got {array.dtype}")
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3 or (array.shape[0] not in (1, 3) and array.shape[-1] not in (1, 3)):
        raise ValueError(f"image {index}: expected (height, width, channels) or (channels, "
                         f"height, width) with 1 or 3 channels, got shape {array.shape}")
    return array if array.shape[0] in (1, 3) else np.moveaxis(array, -1, 0)


class ViTImageProcessor:
    """Images to `pixel_values` (batch, channels, height, width) float32: resized to `size`
    ({"height", "width"}) with `resample` (2 bilinear, 3 bicubic), multiplied by
    `rescale_factor`, then normalised by `image_mean` and `image_std`, each step as its
    do_* flag says. Grey images become RGB when `do_convert_rgb`."""

    def __init__(self, *, do_resize: bool = True, size: dict | None = None, resample: int = 2,
                 do_rescale: bool = True, rescale_factor: float = 1 / 255,
                 do_normalize: bool = True, image_mean=(0.5, 0.5, 0.5),
                 image_std=(0.5, 0.5, 0.5), do_convert_rgb: bool | None = None, **_ignored):
        size = dict(size or {"height": 224, "width": 224})
        if set(size) != {"height", "width"} or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size.values()):
            raise ValueError(f"ViTImageProcessor: size must be {{'height': int, 'width': int}} "
                             f"(positive), got {size!r}")
        if resample not in RESAMPLE:
            raise ValueError(f"ViTImageProcessor: resample={resample!r} is not supported; "
                             f"valid: {sorted(RESAMPLE)} (bilinear, bicubic)")
        if not (isinstance(rescale_factor, (int, float)) and math.isfinite(rescale_factor)):
            raise ValueError(f"ViTImageProcessor: rescale_factor must be a number, got "
                             f"{rescale_factor!r}")
        self.mean = np.asarray(image_mean, dtype=np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(image_std, dtype=np.float32).reshape(-1, 1, 1)
        if (self.std == 0).any():
            raise ValueError(f"ViTImageProcessor: image_std must be non-zero, got {image_std!r}")
        self.do_resize, self.size, self.resample = do_resize, size, resample
        self.do_rescale, self.rescale_factor = do_rescale, rescale_factor
        self.do_normalize = do_normalize
        self.do_convert_rgb = bool(do_convert_rgb)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, **overrides) -> ViTImageProcessor:
        """The processor of a folder or hub repo id, from its preprocessor_config.json."""
        folder = resolve_folder(name_or_path, revision=revision, cache_dir=cache_dir,
                                local_files_only=local_files_only)
        path = Path(folder) / IMAGE_PROCESSOR_FILE
        if not path.is_file():
            raise dl.CheckpointError(f"{folder} has no {IMAGE_PROCESSOR_FILE}; an image model's "
                                     "folder carries one (transformers' image processor "
                                     "save_pretrained writes it)")
        return cls(**{**_read_json(path), **overrides})

    def preprocess_one(self, image, index: int = 0) -> np.ndarray:
        """One image as (channels, height, width) float32 pixel values."""
        array = _channels_first(image, index)
        if self.do_convert_rgb and array.shape[0] == 1:
            array = np.repeat(array, 3, axis=0)
        if self.do_resize:
            array = resize(array, self.size["height"], self.size["width"], self.resample)
        values = array.astype(np.float64) * self.rescale_factor if self.do_rescale \
            else array.astype(np.float64)
        values = values.astype(np.float32)
        if self.do_normalize:
            values = (values - self.mean) / self.std
        return values

    def __call__(self, images, return_tensors: str | None = "dl") -> dict:
        """{"pixel_values": (batch, channels, height, width)} for one image or a list of
        them, as a dl.Tensor (`return_tensors="dl"`) or a NumPy array ("np")."""
        if return_tensors not in ("dl", "np", None):
            raise ValueError(f"ViTImageProcessor: return_tensors must be 'dl' or 'np', got "
                             f"{return_tensors!r}")
        batch = images if isinstance(images, (list, tuple)) else [images]
        if not batch:
            raise ValueError("ViTImageProcessor: no images given")
        values = [self.preprocess_one(image, i) for i, image in enumerate(batch)]
        if len({v.shape for v in values}) > 1:
            raise ValueError("ViTImageProcessor: with do_resize=False the images must share one "
                             f"size to be batched, got {sorted({v.shape for v in values})}")
        stacked = np.stack(values)
        return {"pixel_values": dl.as_tensor(stacked) if return_tensors == "dl" else stacked}


class AutoImageProcessor:
    """`AutoImageProcessor.from_pretrained(path)`: the image processor a folder names (the
    ViT-style resize, rescale and normalise pipeline)."""

    def __init__(self):
        raise TypeError("AutoImageProcessor is not instantiated: use "
                        "AutoImageProcessor.from_pretrained(path)")

    @staticmethod
    def from_pretrained(name_or_path: str | os.PathLike, **kwargs) -> ViTImageProcessor:
        return ViTImageProcessor.from_pretrained(name_or_path, **kwargs)
