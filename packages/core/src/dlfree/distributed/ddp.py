"""`DistributedDataParallel`: a module replicated on every rank, its gradients averaged.

It lives in the core, beside the Reducer that does the work, and wraps any module by what
it offers (`named_parameters()`, `named_buffers()`, calling it, `state_dict()`, ...), so the
core needs no dlfree-nn; dlfree-nn re-exports it as `dl.nn.parallel.DistributedDataParallel`.
Like torch's, it answers the module questions an optimizer, a training loop or a
checkpoint asks (`parameters()`, `train()`, `state_dict()` with names under `module.`);
save `ddp.module` itself to get the plain names.
"""

from __future__ import annotations

import contextlib

from ..autograd import is_grad_enabled, no_grad
from . import coalesce
from .group import member_group
from .reducer import Reducer

__all__ = ["DistributedDataParallel"]

_PREFIX = "module."


class DistributedDataParallel:
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

    def __init__(self, module, bucket_cap_mb: float = 25, find_unused_parameters: bool = False,
                 broadcast_buffers: bool = True, gradient_as_bucket_view: bool = True,
                 process_group=None):
        missing = [name for name in ("named_parameters", "named_buffers")
                   if not callable(getattr(module, name, None))] + \
            ([] if callable(module) else ["__call__"])
        if missing:
            raise TypeError(f"DistributedDataParallel wraps a module (a dlfree.nn Module, or "
                            f"anything with named_parameters(), named_buffers() and a call), "
                            f"got {type(module).__name__}, which lacks {', '.join(missing)}")
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
        with no_grad():
            coalesce.broadcast_tensors([t for _, t in state], self._root, process_group)
        self.reducer = Reducer(list(module.named_parameters()), process_group, bucket_cap_mb,
                               gradient_as_bucket_view, find_unused_parameters)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        self.reducer.check_finished()
        if self.broadcast_buffers:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                coalesce.broadcast_tensors(buffers, self._root, self.process_group)
        output = self.module(*args, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
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

    # ------------------------------------------- the wrapped module, under `module.`
    @property
    def training(self) -> bool:
        return self.module.training

    def train(self, mode: bool = True) -> DistributedDataParallel:
        self.module.train(mode)
        return self

    def eval(self) -> DistributedDataParallel:
        return self.train(False)

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        for name, p in self.module.named_parameters(recurse=recurse):
            yield prefix + _PREFIX + name, p

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        for name, b in self.module.named_buffers(recurse=recurse):
            yield prefix + _PREFIX + name, b

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def children(self):
        yield self.module

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """The wrapped module's state dict, its names under `module.` (as torch's)."""
        return self.module.state_dict(destination, prefix + _PREFIX, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True):
        """Load a state dict saved from a DistributedDataParallel (names under `module.`)."""
        inner = {k[len(_PREFIX):] if k.startswith(_PREFIX) else k: v
                 for k, v in state_dict.items()}
        result = self.module.load_state_dict(inner, strict)
        return type(result)([_PREFIX + k for k in result.missing_keys],
                            [_PREFIX + k for k in result.unexpected_keys])

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.module.zero_grad(set_to_none)

    def __repr__(self) -> str:
        inner = repr(self.module).replace("\n", "\n  ")
        return (f"DistributedDataParallel(buckets={len(self.reducer.buckets)}, "
                f"broadcast_buffers={self.broadcast_buffers}, find_unused_parameters="
                f"{self.find_unused_parameters}\n  (module): {inner}\n)")
