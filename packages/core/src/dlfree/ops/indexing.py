"""Indexing: __getitem__, gather/scatter, index_select/index_add, masks, tril/triu."""

from __future__ import annotations

__all__: list[str] = []
