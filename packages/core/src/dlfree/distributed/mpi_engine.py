"""The MPI engine: collectives on arrays through mpi4py's buffer methods.

Every call starts MPI's non-blocking operation (Iallreduce, Ibcast, ...) and returns its
Work; the blocking collectives wait on that Work, which polls with a timeout instead of
blocking inside MPI. Arrays reach MPI as they are, without a copy: the collectives layer
passes contiguous arrays, and this engine stages only what MPI cannot take directly:
CuPy arrays when the MPI library is not CUDA-aware (through host memory), and float16
when the library has no datatype for it (reduced in float32).
"""

from __future__ import annotations

import numpy as np

from .reduce_op import ReduceOp, divide_by_ranks
from .work import DoneWork, MPIWork


def _xp(array):
    if isinstance(array, np.ndarray):
        return np
    import cupy

    return cupy


def memory_kinds(mpi, comm=None) -> str | None:
    """The MPI-4.1 `mpi_memory_alloc_kinds` info of `comm` (of a short-lived MPI session when
    none is given, so that MPI itself is not initialized), or None if the library has none."""
    try:
        if comm is not None:
            return comm.Get_info().Get("mpi_memory_alloc_kinds")
        session = mpi.Session.Init()
        try:
            return session.Get_info().Get("mpi_memory_alloc_kinds")
        finally:
            session.Finalize()
    except (mpi.Exception, NotImplementedError, AttributeError):
        return None


def is_cuda_aware(kinds: str | None) -> bool:
    """Whether memory kinds as `memory_kinds` gives them include CUDA device memory."""
    return kinds is not None and any(kind.strip().startswith("cuda")
                                     for kind in kinds.split(","))


def _has_float16(mpi) -> bool:
    from mpi4py.util import dtlib

    try:
        return dtlib.from_numpy_dtype(np.float16) != mpi.DATATYPE_NULL
    except (ValueError, KeyError, TypeError, mpi.Exception):
        return False


class MPIEngine:
    """Collectives of one MPI communicator on NumPy (and CuPy) arrays."""

    name = "mpi"

    def __init__(self, comm, mpi, timeout: float | None):
        self.comm = comm
        self.mpi = mpi
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.cuda_aware = is_cuda_aware(memory_kinds(mpi, comm))
        self.float16 = _has_float16(mpi)
        self._ops = {ReduceOp.SUM: mpi.SUM, ReduceOp.AVG: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD,
                     ReduceOp.MIN: mpi.MIN, ReduceOp.MAX: mpi.MAX}

    def _work(self, requests: list, what: str, *arrays) -> MPIWork:
        """The Work of `requests`, keeping `arrays` (the buffers MPI uses) alive until done."""
        return MPIWork(requests, f"{what} (MPI) on rank {self.rank} of {self.size}",
                       self.timeout, self.mpi, keep=arrays)

    def _staged(self, array, writes: bool):
        """The buffer MPI uses for `array`, and the step that copies it back (or None)."""
        buf = array
        on_gpu = not isinstance(array, np.ndarray)
        if on_gpu:
            import cupy

            cupy.cuda.get_current_stream().synchronize()  # MPI reads outside CUDA's streams
            if not self.cuda_aware:
                buf = cupy.asnumpy(array)
        if buf.dtype == np.float16 and not self.float16:
            buf = buf.astype(np.float32)
        if buf is array or not writes:
            return buf, None

        def copy_back():
            if on_gpu:
                array[...] = _xp(array).asarray(buf).astype(array.dtype, copy=False)
            else:
                np.copyto(array, buf, casting="unsafe")

        return buf, copy_back

    def _finish(self, work, buf, back, average: bool):
        if average:
            work.then(lambda: divide_by_ranks(buf, self.size, _xp(buf)))
        if back is not None:
            work.then(back)
        return work

    # ------------------------------------------------------------------ collectives
    def all_reduce(self, array, op: ReduceOp):
        buf, back = self._staged(array, writes=True)
        request = self.comm.Iallreduce(self.mpi.IN_PLACE, buf, self._ops[op])
        return self._finish(self._work([request], "all_reduce", array, buf), buf, back,
                            op is ReduceOp.AVG)

    def broadcast(self, array, root: int):
        buf, back = self._staged(array, writes=self.rank != root)
        return self._finish(self._work([self.comm.Ibcast(buf, root)], "broadcast", array, buf),
                            buf, back, False)

    def reduce(self, array, op: ReduceOp, root: int):
        at_root = self.rank == root
        buf, back = self._staged(array, writes=at_root)
        if at_root:
            request = self.comm.Ireduce(self.mpi.IN_PLACE, buf, self._ops[op], root)
        else:
            request = self.comm.Ireduce(buf, None, self._ops[op], root)
        return self._finish(self._work([request], "reduce", array, buf), buf, back,
                            at_root and op is ReduceOp.AVG)

    def all_gather(self, send, recv):
        """`recv` (size x send's elements) gets every rank's `send`; send=None means this
        rank's part of `recv` already holds it (MPI_IN_PLACE)."""
        out, back = self._staged(recv, writes=True)
        source = self.mpi.IN_PLACE if send is None else self._staged(send, writes=False)[0]
        request = self.comm.Iallgather(source, out)
        return self._finish(self._work([request], "all_gather", send, source, recv, out), out,
                            back, False)

    def reduce_scatter(self, send, recv, op: ReduceOp):
        source = self._staged(send, writes=False)[0]
        out, back = self._staged(recv, writes=True)
        request = self.comm.Ireduce_scatter_block(source, out, self._ops[op])
        return self._finish(self._work([request], "reduce_scatter", send, source, recv, out),
                            out, back,
                            op is ReduceOp.AVG)

    def gather(self, send, recv, root: int):
        source = self._staged(send, writes=False)[0]
        out, back = self._staged(recv, writes=True) if self.rank == root else (None, None)
        request = self.comm.Igather(source, out, root)
        return self._finish(self._work([request], "gather", send, source, recv, out), out,
                            back, False)

    def scatter(self, send, recv, root: int):
        source = self._staged(send, writes=False)[0] if self.rank == root else None
        out, back = self._staged(recv, writes=True)
        request = self.comm.Iscatter(source, out, root)
        return self._finish(self._work([request], "scatter", send, source, recv, out), out,
                            back, False)

    def all_to_all(self, send, send_counts, recv, recv_counts):
        """Flat `send` holds the parts for rank 0, 1, ... (`send_counts` elements each);
        flat `recv` gets the parts from rank 0, 1, ... (`recv_counts`)."""
        source = self._staged(send, writes=False)[0]
        out, back = self._staged(recv, writes=True)
        send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(int).tolist()
        recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(int).tolist()
        request = self.comm.Ialltoallv([source, (list(send_counts), send_displs)],
                                       [out, (list(recv_counts), recv_displs)])
        return self._finish(self._work([request], "all_to_all", send, source, recv, out), out,
                            back, False)

    def send(self, array, peer: int, tag: int):
        buf = self._staged(array, writes=False)[0]
        return self._work([self.comm.Isend(buf, peer, tag)], f"send to rank {peer}", array,
                          buf)

    def recv(self, array, peer: int, tag: int):
        buf, back = self._staged(array, writes=True)
        work = self._work([self.comm.Irecv(buf, peer, tag)], f"recv from rank {peer}", array,
                          buf)
        return self._finish(work, buf, back, False)

    def barrier(self):
        if self.size == 1:
            return DoneWork("barrier")
        return self._work([self.comm.Ibarrier()], "barrier")

    # ------------------------------------------------------ small Python objects
    def broadcast_object(self, obj, root: int):
        return self.comm.bcast(obj, root)

    def all_gather_object(self, obj) -> list:
        return self.comm.allgather(obj)

    def close(self) -> None:
        self.comm.Free()
