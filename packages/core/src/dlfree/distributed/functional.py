"""Differentiable collectives: the result is a new tensor, and backward runs the matching
collective on the gradient (torch.distributed.nn.functional's idea). SyncBatchNorm is
built on them."""

from __future__ import annotations

from ..autograd.function import Function
from ..tensor import Tensor
from .reduce_op import ReduceOp, as_reduce_op


class _AllReduce(Function):
    """y = the SUM (or AVG) over the ranks of x, on every rank. The loss of a data-parallel
    step is the sum of the ranks' losses, so dL/dx on each rank is the same reduction of
    the ranks' dL/dy."""

    def forward(self, a, op: ReduceOp, group):
        from .collectives import all_reduce as all_reduce_in_place

        self.op, self.group = op, group
        out = self.xp.ascontiguousarray(a).copy()
        all_reduce_in_place(Tensor._make(out, self.device), op, group)
        return out

    def backward(self, grad):
        return (all_reduce(grad, self.op, self.group),)


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None) -> Tensor:
    """The SUM or AVG of `tensor` over the ranks, as a new tensor that backward reaches
    through; `tensor` itself is left unchanged."""
    op = as_reduce_op(op, "distributed.functional.all_reduce")
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise ValueError(f"distributed.functional.all_reduce: op must be ReduceOp.SUM or "
                         f"ReduceOp.AVG (the differentiable ones), got {op!r}")
    return _AllReduce.apply(tensor, op=op, group=group)
