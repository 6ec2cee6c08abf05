"""Data for the Trainer tests: well-separated Gaussian blobs to classify."""

from __future__ import annotations

import numpy as np


def blobs(n: int = 24, features: int = 4, classes: int = 3, seed: int = 0):
    """(x, y): `classes` well-separated Gaussian blobs, float32 inputs and int64 labels."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(classes, features))
    y = np.arange(n) % classes
    x = (centers[y] + rng.normal(size=(n, features))).astype("float32")
    return x, y.astype("int64")
