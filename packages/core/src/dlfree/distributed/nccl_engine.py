"""The NCCL engine: collectives on CuPy arrays through `cupy.cuda.nccl`, on a stream of its own.

A call first makes the engine's stream wait for the caller's current stream (so it reads
what earlier kernels wrote), queues the NCCL call, records an event and returns a Work
that completes with the event. The ranks find each other through MPI: rank 0's NCCL
unique id is broadcast over the group's MPI communicator.
"""

from __future__ import annotations

import numpy as np

from .reduce_op import ReduceOp, divide_by_ranks
from .work import StreamWork

_AVG_SINCE = 21000  # NCCL 2.10 added ncclAvg


def nccl_unavailable_reason() -> str | None:
    """None when NCCL can run here (CuPy with NCCL and a GPU that answers), else why not."""
    from .. import cuda

    reason = cuda.unavailable_reason()
    if reason is not None:
        return reason
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        return f"CuPy has no NCCL ({e})"
    if not getattr(nccl, "available", True):
        return "CuPy was built without NCCL"
    return None


def nccl_version() -> str | None:
    """NCCL's runtime version as "2.21.5", or None when CuPy or NCCL is missing."""
    try:
        from cupy.cuda import nccl

        code = nccl.get_version()
    except Exception:  # ImportError, or CuPy failing to load libnccl
        return None
    major, rest = divmod(code, 10000) if code >= 10000 else divmod(code, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def local_device(world, mpi, device_id: int | None) -> int:
    """The GPU of this rank: `device_id`, or its rank among the ranks of its machine."""
    from .. import cuda

    if device_id is not None:
        return int(device_id)
    node = world.Split_type(mpi.COMM_TYPE_SHARED)
    local_rank = node.Get_rank()
    node.Free()
    return local_rank % max(cuda.device_count(), 1)


class NCCLEngine:
    """Collectives of one NCCL communicator on CuPy arrays of one GPU."""

    name = "nccl"

    def __init__(self, comm, device_index: int, timeout: float | None):
        import cupy
        from cupy.cuda import nccl

        self.cupy, self.nccl = cupy, nccl
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.device_index = device_index
        self.timeout = timeout
        uid = comm.bcast(nccl.get_unique_id() if self.rank == 0 else None, 0)
        with cupy.cuda.Device(device_index):
            self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.native_avg = nccl.get_version() >= _AVG_SINCE
        self._ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
                     ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX,
                     ReduceOp.AVG: nccl.NCCL_AVG if self.native_avg else nccl.NCCL_SUM}
        self._dtypes = {np.dtype(np.int8): nccl.NCCL_INT8, np.dtype(np.uint8): nccl.NCCL_UINT8,
                        np.dtype(np.bool_): nccl.NCCL_UINT8,
                        np.dtype(np.int32): nccl.NCCL_INT32,
                        np.dtype(np.uint32): nccl.NCCL_UINT32,
                        np.dtype(np.int64): nccl.NCCL_INT64,
                        np.dtype(np.uint64): nccl.NCCL_UINT64,
                        np.dtype(np.float16): nccl.NCCL_FLOAT16,
                        np.dtype(np.float32): nccl.NCCL_FLOAT32,
                        np.dtype(np.float64): nccl.NCCL_FLOAT64}

    def _dtype(self, array) -> int:
        try:
            return self._dtypes[array.dtype]
        except KeyError:
            raise TypeError(f"NCCL cannot reduce {array.dtype} arrays; valid dtypes: "
                            f"{', '.join(sorted(str(d) for d in self._dtypes))}") from None

    def _begin(self) -> None:
        ready = self.cupy.cuda.Event(disable_timing=True)
        ready.record(self.cupy.cuda.get_current_stream())
        self.stream.wait_event(ready)

    def _end(self, what: str, keep: tuple, after=None) -> StreamWork:
        if after is not None:
            with self.stream:
                after()
        done = self.cupy.cuda.Event(disable_timing=True)
        done.record(self.stream)
        return StreamWork(done, f"{what} (NCCL) on rank {self.rank} of {self.size}",
                          self.timeout, self.cupy.cuda.get_current_stream, keep)

    def _average(self, array, op: ReduceOp):
        if op is ReduceOp.AVG and not self.native_avg:
            return lambda: divide_by_ranks(array, self.size, self.cupy)
        if op is ReduceOp.AVG and array.dtype.kind != "f":  # ncclAvg is for floats
            return lambda: divide_by_ranks(array, self.size, self.cupy)
        return None

    def _op(self, op: ReduceOp, array) -> int:
        if op is ReduceOp.AVG and array.dtype.kind != "f":
            return self.nccl.NCCL_SUM
        return self._ops[op]

    def all_reduce(self, array, op: ReduceOp):
        self._begin()
        self.comm.allReduce(array.data.ptr, array.data.ptr, array.size, self._dtype(array),
                            self._op(op, array), self.stream.ptr)
        return self._end("all_reduce", (array,), self._average(array, op))

    def broadcast(self, array, root: int):
        self._begin()
        self.comm.broadcast(array.data.ptr, array.data.ptr, array.size, self._dtype(array),
                            root, self.stream.ptr)
        return self._end("broadcast", (array,))

    def reduce(self, array, op: ReduceOp, root: int):
        self._begin()
        self.comm.reduce(array.data.ptr, array.data.ptr, array.size, self._dtype(array),
                         self._op(op, array), root, self.stream.ptr)
        after = self._average(array, op) if self.rank == root else None
        return self._end("reduce", (array,), after)

    def all_gather(self, send, recv):
        self._begin()
        count = recv.size // self.size
        source = recv.data.ptr + self.rank * count * recv.itemsize if send is None else \
            send.data.ptr
        self.comm.allGather(source, recv.data.ptr, count, self._dtype(recv), self.stream.ptr)
        return self._end("all_gather", (send, recv))

    def reduce_scatter(self, send, recv, op: ReduceOp):
        self._begin()
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size, self._dtype(recv),
                                self._op(op, recv), self.stream.ptr)
        return self._end("reduce_scatter", (send, recv), self._average(recv, op))

    def _exchange(self, what: str, sends: list, recvs: list, keep: tuple) -> StreamWork:
        """Point-to-point pairs (peer, array) in one NCCL group call."""
        self._begin()
        self.nccl.groupStart()
        for peer, array in sends:
            self.comm.send(array.data.ptr, array.size, self._dtype(array), peer, self.stream.ptr)
        for peer, array in recvs:
            self.comm.recv(array.data.ptr, array.size, self._dtype(array), peer, self.stream.ptr)
        self.nccl.groupEnd()
        return self._end(what, keep)

    def _parts(self, flat, counts):
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        return [flat[offsets[i]:offsets[i + 1]] for i in range(len(counts))]

    def gather(self, send, recv, root: int):
        recvs = []
        if self.rank == root:
            recvs = list(enumerate(self._parts(recv, [send.size] * self.size)))
        return self._exchange("gather", [(root, send)], recvs, (send, recv))

    def scatter(self, send, recv, root: int):
        sends = []
        if self.rank == root:
            sends = list(enumerate(self._parts(send, [recv.size] * self.size)))
        return self._exchange("scatter", sends, [(root, recv)], (send, recv))

    def all_to_all(self, send, send_counts, recv, recv_counts):
        sends = list(enumerate(self._parts(send, send_counts)))
        recvs = list(enumerate(self._parts(recv, recv_counts)))
        return self._exchange("all_to_all", sends, recvs, (send, recv))

    def send(self, array, peer: int, tag: int):
        return self._exchange(f"send to rank {peer}", [(peer, array)], [], (array,))

    def recv(self, array, peer: int, tag: int):
        return self._exchange(f"recv from rank {peer}", [], [(peer, array)], (array,))

    def close(self) -> None:
        self.comm.destroy()
