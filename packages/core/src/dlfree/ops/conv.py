"""Convolutions (1-d, 2-d, 3-d, transposed), unfold/fold and padding."""

from __future__ import annotations

__all__: list[str] = []
