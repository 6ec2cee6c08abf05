"""MNIST's IDX file format, written for tests: small files the dataset readers can load."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np


def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding: two zero bytes, type 0x08 (unsigned byte), the number of dimensions,
    each dimension as a big-endian int32, then the bytes."""
    header = bytes([0, 0, 0x08, array.ndim])
    header += b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_mnist(folder: Path, rng, prefix: str = "train", n: int = 6, gz: bool = True,
                images: np.ndarray | None = None, labels: np.ndarray | None = None):
    """Write `prefix`-images/labels IDX files (gzipped if `gz`) into `folder`: the `images`
    (n, 28, 28) and `labels` given, or random ones; return both."""
    if images is None:
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    if labels is None:
        labels = rng.integers(0, 10, size=len(images), dtype=np.uint8)
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in ((f"{prefix}-images-idx3-ubyte", images),
                        (f"{prefix}-labels-idx1-ubyte", labels)):
        data = idx_bytes(array)
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)
    return images, labels


def learnable_digits(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """`n` 28x28 uint8 images whose label 0-9 says where a bright 6x6 square sits (a 5 by 2
    grid of places), over faint noise: a small model learns them in a few steps."""
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    images = rng.integers(0, 40, size=(n, 28, 28)).astype(np.uint8)
    for image, label in zip(images, labels):
        row, col = 2 + 13 * (label // 5), 1 + 5 * (label % 5)
        image[row:row + 6, col:col + 6] = 255
    return images, labels
