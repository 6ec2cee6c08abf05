"""Array helpers shared by the metrics, written against any backend's array module `xp`."""

from __future__ import annotations


def safe_divide(num, den, xp, fill=0.0):
    """num / den in float64, `fill` where den is 0 (no warning, no NaN unless fill is NaN)."""
    num = xp.asarray(num, dtype=xp.float64)
    den = xp.asarray(den, dtype=xp.float64)
    nonzero = den != 0
    return xp.where(nonzero, num / xp.where(nonzero, den, 1.0), fill)
