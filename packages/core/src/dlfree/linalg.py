"""`dl.linalg`: norms and matrix functions (PyTorch's torch.linalg names)."""

from __future__ import annotations

__all__: list[str] = []
