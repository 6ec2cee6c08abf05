"""`Reducer`: the gradient averaging of data parallelism, in buckets, during backward.

The parameters are cut into buckets in reverse order (backward produces the last layers'
gradients first), each at most `bucket_cap_mb` (the first, 1 MB, so that communication
starts early). A post-accumulate-grad hook on every parameter copies its gradient into
its bucket's flat buffer; when a bucket's last gradient has arrived, its all-reduce (AVG)
starts at once, asynchronously, while backward goes on with the earlier layers. Buckets
start in index order on every rank, so the collectives match even if the ranks' backward
visits parameters in different orders. When the last bucket has started, the reducer
waits for all of them and leaves the averaged gradients in `.grad`: with
`gradient_as_bucket_view` each `.grad` is a view into its bucket (no copy back, and the
next backward accumulates straight into the bucket).
"""

from __future__ import annotations

import numpy as np

from ..errors import DistributedError
from ..tensor import Tensor
from .group import member_group
from .reduce_op import ReduceOp

_MB = 1024 * 1024
FIRST_BUCKET_MB = 1.0


class _Bucket:
    """Parameters whose gradients are all-reduced together, in one flat array."""

    def __init__(self, index: int, members: list[int], params: list):
        self.index = index
        self.members = members
        first = params[members[0]]
        xp = first._device.xp
        self.flat = xp.zeros(sum(params[i].numel() for i in members), dtype=first._data.dtype)
        self.views = {}
        offset = 0
        for i in members:
            n = params[i].numel()
            self.views[i] = self.flat[offset:offset + n].reshape(params[i]._data.shape)
            offset += n
        self.pending = len(members)
        self.work = None


def bucket_members(params: list, cap_mb: float, first_cap_mb: float) -> list[list[int]]:
    """Indices of `params` per bucket: reverse order, one dtype and device per bucket, the
    first bucket up to `first_cap_mb` and the others up to `cap_mb` (a parameter larger than
    the cap gets a bucket of its own)."""
    buckets: list[list[int]] = []
    current: list[int] = []
    size = 0
    kind = None
    for i in reversed(range(len(params))):
        p = params[i]
        nbytes = p.numel() * p._data.itemsize
        cap = (first_cap_mb if not buckets else cap_mb) * _MB
        this_kind = (p._data.dtype, p._device)
        if current and (this_kind != kind or size + nbytes > cap):
            buckets.append(current)
            current, size = [], 0
        current.append(i)
        size += nbytes
        kind = this_kind
    if current:
        buckets.append(current)
    return buckets


class Reducer:
    """Averages the gradients of `named_params` over `group` during backward.

    Call `prepare_for_backward(outputs)` after each forward whose backward should be
    synchronized (DistributedDataParallel does); other backward passes (under `no_sync`)
    only accumulate locally. With `find_unused_parameters`, parameters that the outputs do
    not depend on count as ready at once (zero gradient), and those that no rank used keep
    their `.grad` unchanged; without it, such a parameter is an error at the next
    `prepare_for_backward`, naming it.
    """

    def __init__(self, named_params: list, group=None, bucket_cap_mb: float = 25,
                 gradient_as_bucket_view: bool = True, find_unused_parameters: bool = False,
                 first_bucket_cap_mb: float = FIRST_BUCKET_MB):
        if not bucket_cap_mb > 0:
            raise ValueError(f"bucket_cap_mb must be > 0, got {bucket_cap_mb!r}")
        self.group = member_group(group, "DistributedDataParallel")
        named = [(n, p) for n, p in named_params if p.requires_grad]
        if not named:
            raise ValueError("DistributedDataParallel: the module has no parameter that "
                             "requires grad; there is nothing to synchronize")
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.find_unused_parameters = find_unused_parameters
        self.buckets = [_Bucket(b, members, self.params) for b, members in
                        enumerate(bucket_members(self.params, bucket_cap_mb,
                                                 min(first_bucket_cap_mb, bucket_cap_mb)))]
        self.bucket_of = {i: bucket for bucket in self.buckets for i in bucket.members}
        self.position = {id(p): i for i, p in enumerate(self.params)}
        self.handles = [p.register_post_accumulate_grad_hook(self._on_gradient)
                        for p in self.params]
        self.armed = False
        self.got_gradient = False
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        self.used = None

    # ------------------------------------------------------------ iteration
    def prepare_for_backward(self, outputs) -> None:
        """Expect the backward of `outputs` to produce every gradient (see the class)."""
        self.check_finished()
        for bucket in self.buckets:
            bucket.pending = len(bucket.members)
            bucket.work = None
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        self.armed = True
        self.got_gradient = False
        if self.find_unused_parameters:
            reached = _reachable_leaves(outputs)
            self.used = np.zeros(len(self.params), dtype=np.int32)
            for i, p in enumerate(self.params):
                if id(p) not in reached:
                    self.bucket_of[i].views[i][...] = 0
                    self._mark(i)

    def check_finished(self) -> None:
        """A DistributedError if the last prepared backward began but left gradients
        unreduced. A forward whose backward never came (an evaluation with gradients
        enabled) is no error: as in torch, nothing was reduced and nothing is owed."""
        if not self.armed:
            return
        self.armed = False
        if not self.got_gradient:
            for bucket in self.buckets[:self.next_bucket]:  # only unused parameters' buckets
                bucket.work.wait()
            return
        missing = [self.names[i] for i, done in enumerate(self.ready) if not done]
        raise DistributedError(
            f"DistributedDataParallel on rank {self.group.ranks[self.group.rank]}: the "
            f"previous iteration's backward gave no gradient to {', '.join(missing)}, so "
            "the gradients of their buckets were not averaged over the ranks (parameters the "
            "loss does not depend on); pass "
            "find_unused_parameters=True if some parameters legitimately take no part in "
            "the loss")

    def _on_gradient(self, param) -> None:
        if not self.armed:
            return
        i = self.position[id(param)]
        if self.ready[i]:
            raise DistributedError(
                f"DistributedDataParallel: parameter {self.names[i]} received a gradient twice "
                "in one iteration (two backward passes through one forward?); run one "
                "backward per forward, or accumulate under no_sync()")
        view = self.bucket_of[i].views[i]
        if param.grad._data is not view:
            view[...] = param.grad._data
            if self.gradient_as_bucket_view:
                param.grad = Tensor._make(view, param._device)
        self.got_gradient = True
        if self.used is not None:
            self.used[i] = 1
        self._mark(i)
        for bucket in self.buckets[:self.next_bucket]:  # let MPI progress those in flight
            bucket.work.is_completed()

    def _mark(self, i: int) -> None:
        self.ready[i] = True
        bucket = self.bucket_of[i]
        bucket.pending -= 1
        while self.next_bucket < len(self.buckets) and \
                self.buckets[self.next_bucket].pending == 0:
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finish()

    def _launch(self, bucket: _Bucket) -> None:
        bucket.work = self.group.engine_for(bucket.flat).all_reduce(bucket.flat, ReduceOp.AVG)

    def _finish(self) -> None:
        for bucket in self.buckets:
            bucket.work.wait()
        globally_unused = set()
        if self.used is not None:  # which parameters some rank used
            self.group.mpi.all_reduce(self.used, ReduceOp.MAX).wait()
            globally_unused = {i for i, u in enumerate(self.used) if not u}
        for i, p in enumerate(self.params):
            if i in globally_unused:
                continue
            view = self.bucket_of[i].views[i]
            if p.grad is None:
                p.grad = Tensor._make(view if self.gradient_as_bucket_view else view.copy(),
                                      p._device)
            elif p.grad._data is not view:
                p.grad._data[...] = view
            p.grad._vc[0] += 1
        self.armed = False
        self.used = None

    def remove(self) -> None:
        """Take the hooks off the parameters (the reducer stops working)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []


def _reachable_leaves(outputs) -> set:
    """ids of the leaf tensors that the autograd graph of `outputs` reaches."""
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    stack += [t for t in _tensors(outputs) if t.grad_fn is None and t.requires_grad]
    seen, leaves = set(), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Tensor):
            leaves.add(id(node))
            continue
        stack.extend(e for e in getattr(node, "next_edges", ()) if e is not None)
    return leaves


def _tensors(value):
    """The Tensors inside a module's output (nested tuples, lists and dicts)."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _tensors(v)
