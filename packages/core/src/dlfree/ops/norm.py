"""Normalisation: batch, layer, group, instance, RMS and local-response norms."""

from __future__ import annotations

__all__: list[str] = []
