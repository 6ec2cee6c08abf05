"""`GraphError`: a mistake in a graph's structure or a path that names nothing in its tree."""

from __future__ import annotations

import difflib

from dlfree.errors import DLFreeError

__all__ = ["GraphError", "closest"]


class GraphError(DLFreeError, ValueError):
    """A builder mistake (an unknown tag, `merge` without `split`, a shape that cannot
    merge) or an unknown graph path; the message names the step or path and what is valid."""


def closest(name: str, valid, n: int = 3) -> str:
    """`"; closest: a, b"` naming the valid names nearest to `name`, or a list of them all."""
    valid = list(valid)
    near = difflib.get_close_matches(name, valid, n=n, cutoff=0.5)
    if near:
        return f"; closest: {', '.join(near)}"
    return f"; valid: {', '.join(valid[:12])}{' ...' if len(valid) > 12 else ''}" \
        if valid else "; there are none"
