"""Grouped reductions: the rows of an array that share an id, reduced to one row per id.

The reference kernel sorts the rows by id (skipped when the ids are sorted already, as
`segment_reduce`'s are and as edge lists sorted by target are) and reduces each run of equal
ids with the ufunc's `reduceat`: one pass over contiguous memory. NumPy's `ufunc.at`, the
obvious alternative, walks the rows one by one and is about 2.5x slower than the sorted
`reduceat` at a million rows of 16 floats, and still slower than sort plus `reduceat` when the
ids come unsorted (the sort costs about what `reduceat` does).
"""

from __future__ import annotations

# the ufunc that combines two elements of a group, and the value of an empty group
_UFUNCS = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def identity(xp, reduce: str, dtype):
    """The value a reduction gives an empty group: 0, 1, or the dtype's lowest/highest."""
    if reduce == "sum":
        return 0
    if reduce == "prod":
        return 1
    kind = xp.dtype(dtype).kind
    if kind == "f":
        return -xp.inf if reduce == "amax" else xp.inf
    if kind == "b":
        return reduce != "amax"
    info = xp.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def is_sorted(xp, ids) -> bool:
    """True when `ids` (1-d) never decreases."""
    return ids.size < 2 or bool((ids[1:] >= ids[:-1]).all())


def group_reduce(xp, values, ids, n: int, reduce: str):
    """Reduce the rows of `values` (M, ...) sharing an id of `ids` (M,), into (n, ...);
    ids lie in [0, n) and an id no row has gets `identity`."""
    out = xp.full((n,) + values.shape[1:], identity(xp, reduce, values.dtype),
                  dtype=values.dtype)
    if ids.size == 0:
        return out
    if not is_sorted(xp, ids):
        # NumPy's default sort (SIMD-accelerated) is ~3x its stable one; the order within a
        # group changes only the summation order, and the same ids always sort the same way
        order = xp.argsort(ids)
        ids, values = ids[order], values[order]
    starts = run_starts(xp, ids)
    out[ids[starts]] = getattr(xp, _UFUNCS[reduce]).reduceat(values, starts, axis=0)
    return out


def run_starts(xp, ids):
    """Where each run of equal values of the sorted `ids` (1-d) begins."""
    if ids.size == 0:
        return xp.zeros(0, dtype=xp.intp)
    return xp.flatnonzero(xp.concatenate([xp.ones(1, dtype=bool), ids[1:] != ids[:-1]]))


def segment_reduce_columns(xp, values, ids, starts, n: int, reduce: str):
    """`Backend.segment_reduce_columns` with `reduceat` along the rows of `values` (K, M)."""
    out = xp.full((values.shape[0], n), identity(xp, reduce, values.dtype), dtype=values.dtype)
    if ids.size:
        out[:, ids[starts]] = getattr(xp, _UFUNCS[reduce]).reduceat(values, starts, axis=1)
    return out


def rows_of(index, values, target_shape):
    """The 1-d row index when `target[index] += values` adds whole rows along axis 0 with
    no broadcasting and no negative index (the adjoint of `index_select` and of an
    embedding), else None."""
    rows = index[0] if type(index) is tuple and len(index) == 1 else index
    if getattr(rows, "ndim", 0) != 1 or rows.dtype.kind not in "iu" or \
            values.shape != rows.shape + tuple(target_shape[1:]):
        return None
    return rows if rows.size == 0 or int(rows.min()) >= 0 else None
