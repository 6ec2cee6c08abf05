"""Dropout layers: elementwise (`Dropout`), whole channels (`Dropout2d`) and the
self-normalising variant for SELU networks (`AlphaDropout`); all are the identity in eval
mode."""

from __future__ import annotations

from dlfree import functional as F

from ..module import Module
from ._common import check_probability

__all__ = ["Dropout", "Dropout2d", "AlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_probability(p, type(self).__name__)
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training, zero each element with probability p and scale the rest by 1/(1-p)."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """In training, zero whole channels of (N, C, H, W) input with probability p and scale
    the rest by 1/(1-p)."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """In training, send elements with probability p to SELU's negative saturation value,
    then apply the affine map that keeps zero mean and unit variance."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)
