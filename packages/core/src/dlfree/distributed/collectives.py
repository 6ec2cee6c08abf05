"""Collectives on Tensors, with torch.distributed's names, arguments and in-place results.

Each call checks its arguments on this rank, checks that every rank of the group made the
same call with matching tensors (agreement.py), and hands contiguous arrays to the
group's engine: the tensor's own memory when it is contiguous, else a contiguous copy
that is written back when the collective completes. With `async_op=True` the call
returns its Work at once; otherwise it returns when the result is in place. The tensors a
collective writes count as modified in place (their version advances), and no autograd
graph is recorded, as in torch.
"""

from __future__ import annotations

import numpy as np

from ..errors import DeviceError, DistributedError, DTypeError, ShapeError
from ..tensor import Tensor
from .agreement import describe, dtype_of, tensor_text
from .group import resolve
from .reduce_op import ReduceOp, as_reduce_op
from .work import AllOf, Work

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
           "send", "recv", "isend", "irecv", "barrier", "broadcast_object_list",
           "all_gather_object"]


# --------------------------------------------------------------------------- helpers
def _tensor(t, what: str, name: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {name} must be a dlfree Tensor, got {type(t).__name__}")
    return t


def _like(tensors, reference: Tensor, count: int, what: str, name: str) -> list:
    """`tensors` as a list of `count` tensors shaped, typed and placed like `reference`."""
    if tensors is None or isinstance(tensors, Tensor) or len(tensors) != count:
        got = "None" if tensors is None else f"{len(tensors)} tensors" \
            if not isinstance(tensors, Tensor) else "a Tensor"
        raise ValueError(f"{what}: {name} must be a list of {count} tensors (one per rank of "
                         f"the group), got {got}")
    for i, t in enumerate(tensors):
        _tensor(t, what, f"{name}[{i}]")
        _matches(t, reference, what, f"{name}[{i}]")
    return list(tensors)


def _matches(t: Tensor, reference: Tensor, what: str, name: str, shape=None) -> None:
    if t._data.dtype != reference._data.dtype:
        raise DTypeError(f"{what}: {name} is {t.dtype}, expected {reference.dtype} like the "
                         "other tensors of the call")
    if t._device is not reference._device:
        raise DeviceError(f"{what}: {name} is on {t.device}, expected {reference.device} like "
                          "the other tensors of the call")
    expected = tuple(reference.shape) if shape is None else shape
    if tuple(t.shape) != expected:
        raise ShapeError(f"{what}: {name} has shape {tuple(t.shape)}, expected {expected}")


def _contiguous(t: Tensor, writes: bool):
    """The array an engine gets for `t`, and the step writing it back into `t` (or None)."""
    array = t._data
    if array.flags.c_contiguous:
        return array, None
    xp = t._device.xp
    copy = xp.ascontiguousarray(array)
    return copy, ((lambda: xp.copyto(array, copy)) if writes else None)


def _written(*tensors: Tensor) -> None:
    for t in tensors:
        t._vc[0] += 1


def _agree(pg, call: str, tensor: Tensor | None = None, op=None, root: int = -1,
           count: int = -1) -> None:
    array = None if tensor is None else tensor._data
    device = "cpu" if tensor is None else tensor._device.type
    pg.agreement.check(describe(call, array, device, op, root, count))


def _done(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _stacked(tensors: list, xp):
    return xp.stack([t._data for t in tensors])


def _address(array) -> int:
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


def _chunked_shape(whole: Tensor, part: Tensor, size: int, what: str, whole_name: str) -> None:
    """`whole` must hold `size` parts shaped like `part`: (size * d0, ...) or (size, ...)."""
    shape, part_shape = tuple(whole.shape), tuple(part.shape)
    concatenated = (size * part_shape[0],) + part_shape[1:] if part_shape else None
    if shape not in (concatenated, (size,) + part_shape):
        valid = f"{concatenated} or {(size,) + part_shape}" if concatenated else \
            f"{(size,) + part_shape}"
        raise ShapeError(f"{what}: {whole_name} has shape {shape}; for {size} ranks with parts "
                         f"of shape {part_shape} it must be {valid}")


# ----------------------------------------------------------------- reductions
def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over the ranks; every rank gets the result in `tensor`."""
    what = "all_reduce"
    pg = resolve(group, what)
    if pg is None:
        return None
    op = as_reduce_op(op, what)
    _tensor(tensor, what)
    _agree(pg, what, tensor, op)
    array, back = _contiguous(tensor, writes=True)
    work = pg.engine_for(array).all_reduce(array, op)
    if back is not None:
        work.then(back)
    _written(tensor)
    return _done(work, async_op)


def broadcast(tensor: Tensor, src: int, group=None, async_op: bool = False):
    """Copy global rank `src`'s `tensor` into `tensor` on every rank."""
    what = "broadcast"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(tensor, what)
    root = pg.group_rank(src, what)
    _agree(pg, what, tensor, root=root)
    array, back = _contiguous(tensor, writes=pg.rank != root)
    work = pg.engine_for(array).broadcast(array, root)
    if back is not None:
        work.then(back)
    if pg.rank != root:
        _written(tensor)
    return _done(work, async_op)


def reduce(tensor: Tensor, dst: int, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over the ranks into `tensor` on global rank `dst` (the others'
    tensors are left as they were)."""
    what = "reduce"
    pg = resolve(group, what)
    if pg is None:
        return None
    op = as_reduce_op(op, what)
    _tensor(tensor, what)
    root = pg.group_rank(dst, what)
    _agree(pg, what, tensor, op, root)
    array, back = _contiguous(tensor, writes=pg.rank == root)
    work = pg.engine_for(array).reduce(array, op, root)
    if back is not None:
        work.then(back)
    if pg.rank == root:
        _written(tensor)
    return _done(work, async_op)


def reduce_scatter(output: Tensor, input_list: list, op=ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """`output` on rank r gets the reduction over the ranks of their `input_list[r]`."""
    what = "reduce_scatter"
    pg = resolve(group, what)
    if pg is None:
        return None
    op = as_reduce_op(op, what)
    _tensor(output, what, "output")
    inputs = _like(input_list, output, pg.size, what, "input_list")
    _agree(pg, what, output, op)
    out, back = _contiguous(output, writes=True)
    work = pg.engine_for(out).reduce_scatter(_stacked(inputs, output._device.xp), out, op)
    if back is not None:
        work.then(back)
    _written(output)
    return _done(work, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op=ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """`input` holds one part per rank, (size * d0, ...) or (size, ...); `output` on rank r
    gets the reduction over the ranks of part r."""
    what = "reduce_scatter_tensor"
    pg = resolve(group, what)
    if pg is None:
        return None
    op = as_reduce_op(op, what)
    _tensor(output, what, "output")
    _tensor(input, what, "input")
    _matches(input, output, what, "input", shape=tuple(input.shape))
    _chunked_shape(input, output, pg.size, what, "input")
    _agree(pg, what, output, op)
    source, _ = _contiguous(input, writes=False)
    out, back = _contiguous(output, writes=True)
    work = pg.engine_for(out).reduce_scatter(source, out, op)
    if back is not None:
        work.then(back)
    _written(output)
    return _done(work, async_op)


# ------------------------------------------------------------------ gathering
def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """`tensor_list[r]` gets rank r's `tensor`, on every rank."""
    what = "all_gather"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(tensor, what)
    outputs = _like(tensor_list, tensor, pg.size, what, "tensor_list")
    _agree(pg, what, tensor)
    source, _ = _contiguous(tensor, writes=False)
    xp = tensor._device.xp
    flat = xp.empty((pg.size,) + tuple(tensor.shape), dtype=source.dtype)
    work = pg.engine_for(source).all_gather(source, flat)

    def unpack():
        for t, part in zip(outputs, flat):
            xp.copyto(t._data, part)

    _written(*outputs)
    return _done(work.then(unpack), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False):
    """`output_tensor`, (size * d0, ...) or (size, ...), gets every rank's `input_tensor`
    in rank order. An input that is already this rank's part of the output (a view of it)
    is gathered in place."""
    what = "all_gather_into_tensor"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(output_tensor, what, "output_tensor")
    _tensor(input_tensor, what, "input_tensor")
    _matches(output_tensor, input_tensor, what, "output_tensor",
             shape=tuple(output_tensor.shape))
    _chunked_shape(output_tensor, input_tensor, pg.size, what, "output_tensor")
    _agree(pg, what, input_tensor)
    out, back = _contiguous(output_tensor, writes=True)
    source = input_tensor._data
    part_bytes = source.size * source.itemsize
    in_place = back is None and source.flags.c_contiguous and \
        _address(source) == _address(out) + pg.rank * part_bytes
    if not in_place:
        source, _ = _contiguous(input_tensor, writes=False)
    work = pg.engine_for(out).all_gather(None if in_place else source, out)
    if back is not None:
        work.then(back)
    _written(output_tensor)
    return _done(work, async_op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int = 0, group=None,
           async_op: bool = False):
    """On global rank `dst`, `gather_list[r]` gets rank r's `tensor`; the other ranks pass
    no gather_list."""
    what = "gather"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(tensor, what)
    root = pg.group_rank(dst, what)
    at_root = pg.rank == root
    if at_root:
        outputs = _like(gather_list, tensor, pg.size, what, "gather_list")
    elif gather_list:
        raise ValueError(f"{what}: gather_list is for the destination rank {dst} only; pass "
                         "None on the other ranks")
    _agree(pg, what, tensor, root=root)
    source, _ = _contiguous(tensor, writes=False)
    xp = tensor._device.xp
    flat = xp.empty((pg.size,) + tuple(tensor.shape), dtype=source.dtype) if at_root else None
    work = pg.engine_for(source).gather(source, flat, root)
    if at_root:
        def unpack():
            for t, part in zip(outputs, flat):
                xp.copyto(t._data, part)

        work.then(unpack)
        _written(*outputs)
    return _done(work, async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int = 0, group=None,
            async_op: bool = False):
    """Rank r's `tensor` gets `scatter_list[r]` of global rank `src`; the other ranks pass
    no scatter_list."""
    what = "scatter"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(tensor, what)
    root = pg.group_rank(src, what)
    at_root = pg.rank == root
    if at_root:
        inputs = _like(scatter_list, tensor, pg.size, what, "scatter_list")
    elif scatter_list:
        raise ValueError(f"{what}: scatter_list is for the source rank {src} only; pass None "
                         "on the other ranks")
    _agree(pg, what, tensor, root=root)
    out, back = _contiguous(tensor, writes=True)
    flat = _stacked(inputs, tensor._device.xp) if at_root else None
    work = pg.engine_for(out).scatter(flat, out, root)
    if back is not None:
        work.then(back)
    _written(tensor)
    return _done(work, async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None,
               async_op: bool = False):
    """Rank r sends `input_tensor_list[j]` to rank j, which receives it in its
    `output_tensor_list[r]`; the sizes may differ from pair to pair."""
    what = "all_to_all"
    pg = resolve(group, what)
    if pg is None:
        return None
    for name, tensors in (("input_tensor_list", input_tensor_list),
                          ("output_tensor_list", output_tensor_list)):
        if isinstance(tensors, Tensor) or len(tensors) != pg.size:
            raise ValueError(f"{what}: {name} must be a list of {pg.size} tensors (one per "
                             "rank of the group)")
        for i, t in enumerate(tensors):
            _tensor(t, what, f"{name}[{i}]")
            _matches(t, input_tensor_list[0], what, f"{name}[{i}]", shape=tuple(t.shape))
    first = input_tensor_list[0]
    xp = first._device.xp
    pg.agreement.check(describe(what, xp.empty(0, dtype=first._data.dtype),
                                first._device.type, count=pg.size))
    send_counts = [t.numel() for t in input_tensor_list]
    recv_counts = [t.numel() for t in output_tensor_list]
    pg.agreement.check_counts(what, send_counts, recv_counts)
    send = xp.concatenate([t._data.reshape(-1) for t in input_tensor_list])
    flat = xp.empty(sum(recv_counts), dtype=send.dtype)
    work = pg.engine_for(send).all_to_all(send, send_counts, flat, recv_counts)
    offsets = np.cumsum([0] + recv_counts)

    def unpack():
        for t, start, stop in zip(output_tensor_list, offsets[:-1], offsets[1:]):
            xp.copyto(t._data, flat[start:stop].reshape(t._data.shape))

    _written(*output_tensor_list)
    return _done(work.then(unpack), async_op)


def barrier(group=None, async_op: bool = False):
    """Return once every rank of the group has called barrier."""
    what = "barrier"
    pg = resolve(group, what)
    if pg is None:
        return None
    _agree(pg, what)
    return _done(pg.mpi.barrier(), async_op)


# ------------------------------------------------------------- point to point
def _header(pg, tensor: Tensor) -> np.ndarray:
    """What a send says about its payload: the sender's group rank, dtype, device, shape."""
    return describe("send/recv", tensor._data, tensor._device.type, root=pg.rank,
                    count=tensor.numel())


def isend(tensor: Tensor, dst: int, group=None, tag: int = 0) -> Work | None:
    """Start sending `tensor` to global rank `dst`; its header goes first, so that the
    receiver can check what it gets."""
    what = "isend"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(tensor, what)
    peer = pg.group_rank(dst, what)
    header = _header(pg, tensor)
    agreement = pg.agreement
    head = pg.mpi._work([agreement.comm.Isend(header, peer, tag)], f"send header to rank {dst}",
                        header)
    source, _ = _contiguous(tensor, writes=False)
    body = pg.engine_for(source).send(source, peer, tag)
    return AllOf([head, body], f"send to rank {dst}", pg.timeout)


def send(tensor: Tensor, dst: int, group=None, tag: int = 0) -> None:
    """Send `tensor` to global rank `dst`, which must `recv` it."""
    work = isend(tensor, dst, group, tag)
    if work is not None:
        work.wait()


class _Receive(Work):
    """A receive: the header first (from `src`, or from whichever rank sends when src is
    None), then, once it has said who sent and matched this tensor, the payload.
    `source_rank` is the sender's global rank once the header has arrived."""

    def __init__(self, pg, tensor: Tensor, src: int | None, tag: int):
        super().__init__(f"recv on rank {pg.ranks[pg.rank]}", pg.timeout)
        self._pg, self._tensor, self._tag = pg, tensor, tag
        self._header = np.empty_like(_header(pg, tensor))
        mpi = pg.mpi.mpi
        peer = mpi.ANY_SOURCE if src is None else pg.group_rank(src, "recv")
        self._head = pg.mpi._work([pg.agreement.comm.Irecv(self._header, peer, tag)],
                                  "recv header", self._header)
        self._body = None
        self.source_rank = None

    def _poll(self) -> bool:
        if self._body is None:
            if not self._head.is_completed():
                return False
            self._body = self._start_body()
        return self._body.is_completed()

    def _start_body(self) -> Work:
        pg, tensor = self._pg, self._tensor
        header = self._header
        sender = int(header[2])
        self.source_rank = pg.ranks[sender]
        expected = _header(pg, tensor)
        expected[2] = sender
        engine = pg.engine_for(tensor._data)
        if not (header == expected).all():
            sent = dtype_of(header)
            if sent is not None:  # take the payload off the wire, so that none is left pending
                scratch = tensor._device.xp.empty(int(header[6]), dtype=sent)
                engine.recv(scratch, sender, self._tag).wait()
            raise DistributedError(
                f"recv on rank {pg.ranks[pg.rank]}: rank {self.source_rank} sent "
                f"{tensor_text(header)}, but the receiving tensor is {tensor_text(expected)}; "
                "send and recv must use tensors of the same dtype, shape and device type")
        array, back = _contiguous(tensor, writes=True)
        work = engine.recv(array, sender, self._tag)
        if back is not None:
            work.then(back)
        return work


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0) -> Work | None:
    """Start receiving into `tensor` from global rank `src` (any rank when None); the
    Work's `source_rank` names the sender once it is known."""
    what = "irecv"
    pg = resolve(group, what)
    if pg is None:
        return None
    _tensor(tensor, what)
    _written(tensor)
    return _Receive(pg, tensor, src, tag)


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0) -> int:
    """Receive into `tensor` from global rank `src` (any rank when None); returns the
    sender's global rank."""
    work = irecv(tensor, src, group, tag)
    if work is None:
        return -1
    work.wait()
    return work.source_rank


# ------------------------------------------------------ small Python objects
def broadcast_object_list(object_list: list, src: int = 0, group=None) -> None:
    """Replace the items of `object_list` on every rank by those of global rank `src`
    (pickled by mpi4py: for small values, such as a config or a seed)."""
    what = "broadcast_object_list"
    pg = resolve(group, what)
    if pg is None:
        return
    root = pg.group_rank(src, what)
    _agree(pg, what, root=root, count=len(object_list))
    object_list[:] = pg.mpi.broadcast_object(list(object_list) if pg.rank == root else None,
                                             root)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fill `object_list` (one slot per rank) with every rank's `obj`, in rank order."""
    what = "all_gather_object"
    pg = resolve(group, what)
    if pg is None:
        return
    if len(object_list) != pg.size:
        raise ValueError(f"{what}: object_list must have one slot per rank ({pg.size}), got "
                         f"{len(object_list)}; e.g. [None] * get_world_size()")
    _agree(pg, what, count=len(object_list))
    object_list[:] = pg.mpi.all_gather_object(obj)
