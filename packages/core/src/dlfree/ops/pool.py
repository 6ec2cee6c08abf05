"""Pooling, pixel shuffling and interpolation."""

from __future__ import annotations

__all__: list[str] = []
