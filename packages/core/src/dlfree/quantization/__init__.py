"""Quantization: observers that choose int8 scale/zero-point as torch.ao.quantization does."""

from dlfree.quantization.observers import MinMaxObserver

__all__ = ["MinMaxObserver"]
