"""Loss functions with PyTorch's `reduction` and options."""

from __future__ import annotations

__all__: list[str] = []
