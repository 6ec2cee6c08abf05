"""scikit-learn's 8x8 handwritten digits as a Dataset (needs scikit-learn)."""

from __future__ import annotations

import numpy as np

from .images import LabelledImages


class Digits(LabelledImages):
    """The 1,797 8x8 digit images that ship with scikit-learn (`sklearn.datasets.load_digits`).

    `data` is uint8 (1797, 8, 8) with pixel values 0 to 16, `targets` int64 labels 0 to 9;
    an item is `(image, label)` with the image a float32 array (1, 8, 8) scaled to [0, 1]
    and the label an int, passed through `transform` and `target_transform` when given.
    There is no standard split: use `random_split` with a seeded generator.
    """

    classes = [str(d) for d in range(10)]
    pixel_max = 16

    def __init__(self, transform=None, target_transform=None):
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            raise ModuleNotFoundError(
                "dlfree.data.datasets.Digits needs scikit-learn, which is not installed; "
                "install it with: pip install scikit-learn", name="sklearn") from None
        digits = load_digits()
        self.data = digits.images.astype(np.uint8)
        self.targets = digits.target.astype(np.int64)
        self.transform = transform
        self.target_transform = target_transform

