"""The functional forms of basic layers: linear, bilinear, embedding, one_hot, dropout."""

from __future__ import annotations

__all__: list[str] = []
