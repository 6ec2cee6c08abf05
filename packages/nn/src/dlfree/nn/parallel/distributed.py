"""`DistributedDataParallel`: a module replicated on every rank, its gradients averaged.

It lives here, in dlfree-nn, because it is a Module that wraps a Module (train/eval,
state_dict under `module.`, nesting all work as for any module); the communication is
the core's (`dlfree.distributed.reducer`), and `dlfree.distributed.DistributedDataParallel`
is this class.
"""

from __future__ import annotations

import contextlib

import dlfree as dl
from dlfree.distributed import coalesce
from dlfree.distributed.group import member_group
from dlfree.distributed.reducer import Reducer

from ..module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Run `module` on every rank of `process_group` (the world by default), each on its
    own part of the batch, with gradients averaged over the ranks during backward.

    At construction every rank checks that it holds the same parameters and buffers
    (names, shapes, dtypes) as the others, and takes rank 0's values. Gradients go into
    buckets of `bucket_cap_mb`; a bucket's all-reduce starts as soon as backward has
    produced all of its gradients, so communication overlaps the rest of backward (see
    `dlfree.distributed.reducer`). Under `no_sync()` backward only accumulates locally,
    and the first backward after it averages the accumulated gradients. A parameter that
    gets no gradient is an error naming it at the next forward, unless
    `find_unused_parameters=True` (which costs a walk of the graph after each forward).
    With `broadcast_buffers`, every forward starts from rank 0's buffers (BatchNorm's
    running statistics). With `gradient_as_bucket_view`, each `.grad` is a view into its
    bucket, which saves a copy and memory.
    """

    def __init__(self, module: Module, bucket_cap_mb: float = 25,
                 find_unused_parameters: bool = False, broadcast_buffers: bool = True,
                 gradient_as_bucket_view: bool = True, process_group=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a dlfree.nn Module, got "
                            f"{type(module).__name__}")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.process_group = process_group
        group = member_group(process_group, "DistributedDataParallel")
        self._root = group.ranks[0]
        state = list(module.named_parameters()) + list(module.named_buffers())
        coalesce.check_same_layout(state, "DistributedDataParallel", process_group)
        with dl.no_grad():
            coalesce.broadcast_tensors([t for _, t in state], self._root, process_group)
        self.reducer = Reducer(list(module.named_parameters()), process_group, bucket_cap_mb,
                               gradient_as_bucket_view, find_unused_parameters)

    def forward(self, *args, **kwargs):
        self.reducer.check_finished()
        if self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                coalesce.broadcast_tensors(buffers, self._root, self.process_group)
        output = self.module(*args, **kwargs)
        if dl.is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare_for_backward(output)
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients on this rank only (gradient
        accumulation); the first backward after the block averages what was accumulated."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def extra_repr(self) -> str:
        return (f"buckets={len(self.reducer.buckets)}, broadcast_buffers="
                f"{self.broadcast_buffers}, find_unused_parameters={self.find_unused_parameters}")
