"""`ReduceOp`: how a reducing collective combines the ranks' values (torch's names)."""

from __future__ import annotations

import enum


class ReduceOp(enum.Enum):
    """The reductions of `all_reduce`, `reduce` and `reduce_scatter`.

    AVG is the sum divided by the number of ranks; on integer tensors the division
    truncates toward zero, as NCCL's does.
    """

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"


def as_reduce_op(op, where: str) -> ReduceOp:
    """`op` as a ReduceOp, or a ValueError from `where` listing the valid ones."""
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ReduceOp.__members__:
        return ReduceOp[op.upper()]
    raise ValueError(f"{where}: op must be a dlfree.distributed.ReduceOp "
                     f"({', '.join(ReduceOp.__members__)}), got {op!r}")


def divide_by_ranks(array, size: int, xp) -> None:
    """Turn a SUM over `size` ranks into AVG, in place."""
    if array.dtype.kind == "f":
        xp.divide(array, array.dtype.type(size), out=array)
    else:  # truncate toward zero, as C's integer division (NCCL's ncclAvg) does
        xp.copyto(array, xp.sign(array) * (xp.abs(array) // size))
