"""`dlfree.autograd.graph`: what code outside dl.free's ops tells the autograd graph (as
torch.autograd.graph)."""

from __future__ import annotations

from ..errors import DTypeError
from ..tensor import Tensor

__all__ = ["increment_version"]


def increment_version(tensor: Tensor) -> None:
    """Record that `tensor`'s memory was changed in place by code other than dl.free's
    in-place ops (a compiled loop writing its array, say): its version counter, which its
    views share, advances, so backward refuses a value of it saved before the change."""
    if not isinstance(tensor, Tensor):
        raise DTypeError(f"increment_version: expected a Tensor, got {type(tensor).__name__}")
    tensor._vc[0] += 1
