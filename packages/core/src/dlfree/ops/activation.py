"""Activation functions beyond the elementwise basics (relu6, gelu, silu, glu, ...)."""

from __future__ import annotations

__all__: list[str] = []
