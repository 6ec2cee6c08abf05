"""The check that every rank of a group called the same collective with matching tensors.

Before a collective, each rank describes its call in 16 int64s (which collective, the
reduction, the root, the dtype, the device type, the shape) and one Iallgather on a
communicator of the group's own exchanges the descriptions. When they differ, every
rank raises the same DistributedError naming the ranks and what each passed, instead of
the mismatched collective hanging or mixing up bytes. It costs one small message round
(a few microseconds between processes of one machine); DistributedDataParallel's buckets
skip it, their layout having been checked once when the model was wrapped.
"""

from __future__ import annotations

import zlib

import numpy as np

from ..errors import DistributedError
from .reduce_op import ReduceOp
from .work import MPIWork

CALLS = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
         "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
         "barrier", "broadcast_object_list", "all_gather_object", "send/recv")
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128")
_OPS = list(ReduceOp)
_DEVICES = ("cpu", "cuda")
_WIDTH = 16
_DIMS = _WIDTH - 7  # shape slots; a longer shape keeps its first dims and a checksum


def describe(call: str, array=None, device_type: str = "cpu", op: ReduceOp | None = None,
             root: int = -1, count: int = -1) -> np.ndarray:
    """One rank's call as 16 int64s (see the module docstring)."""
    row = np.full(_WIDTH, -1, dtype=np.int64)
    row[0] = CALLS.index(call)
    row[1] = -1 if op is None else _OPS.index(op)
    row[2] = root
    row[6] = count
    if array is not None:
        name = array.dtype.name
        row[3] = _DTYPES.index(name) if name in _DTYPES else 100 + zlib.crc32(name.encode())
        row[4] = _DEVICES.index(device_type)
        shape = tuple(array.shape)
        row[5] = len(shape)
        if len(shape) <= _DIMS:
            row[7:7 + len(shape)] = shape
        else:
            row[7:_WIDTH - 1] = shape[:_DIMS - 1]
            row[_WIDTH - 1] = zlib.crc32(repr(shape).encode())
    return row


def tensor_text(row: np.ndarray) -> str:
    """The tensor a description describes: "float32 (4, 3) on cpu"."""
    dtype = _DTYPES[row[3]] if row[3] < len(_DTYPES) else "an unusual dtype"
    ndim = int(row[5])
    dims = [int(d) for d in row[7:7 + (ndim if ndim <= _DIMS else _DIMS - 1)]]
    shape = "(" + ", ".join(map(str, dims)) + ("," if ndim == 1 else "") + \
        (", ..." if ndim > _DIMS else "") + ")"
    return f"{dtype} {shape} on {_DEVICES[row[4]]}"


def dtype_of(row: np.ndarray) -> np.dtype | None:
    """The NumPy dtype a description names (None for one outside the table)."""
    return np.dtype(_DTYPES[row[3]]) if 0 <= row[3] < len(_DTYPES) else None


def _text(row: np.ndarray) -> str:
    """What a description says, for the error message."""
    parts = [CALLS[row[0]] if 0 <= row[0] < len(CALLS) else f"call {row[0]}"]
    if row[3] >= 0:
        parts.append(tensor_text(row))
    if row[1] >= 0:
        parts.append(f"op {_OPS[row[1]].name}")
    if row[2] >= 0:
        parts.append(f"root {row[2]}")
    if row[6] >= 0:
        parts.append(f"{row[6]} items")
    return ", ".join(parts)


def mismatch_message(call: str, rows: np.ndarray, ranks: list[int]) -> str:
    """The error for descriptions `rows` (one per group rank) that differ."""
    groups: dict[bytes, list[int]] = {}
    for r, row in enumerate(rows):
        groups.setdefault(row.tobytes(), []).append(ranks[r])
    lines = []
    for key, members in groups.items():
        row = np.frombuffer(key, dtype=np.int64)
        who = f"rank {members[0]}" if len(members) == 1 else \
            f"ranks {', '.join(map(str, members))}"
        lines.append(f"{who}: {_text(row)}")
    return (f"{call}: the ranks disagree on the call: " + "; ".join(lines) + ". Every rank "
            "of the group must call the same collective, in the same order, with tensors of "
            "the same dtype, shape and device type (and the same op and root)")


class Agreement:
    """Runs the check for one process group, on a duplicate of its communicator."""

    def __init__(self, comm, mpi, ranks: list[int], timeout: float | None):
        self.comm = comm
        self.mpi = mpi
        self.ranks = ranks
        self.rank = comm.Get_rank()
        self.timeout = timeout
        self._rows = np.empty((comm.Get_size(), _WIDTH), dtype=np.int64)

    def check(self, row: np.ndarray) -> None:
        """Raise DistributedError on every rank unless all ranks passed the same `row`."""
        rows = self._rows
        request = self.comm.Iallgather(row, rows)
        MPIWork([request], f"{CALLS[row[0]]}: checking that the ranks agree, on rank "
                f"{self.ranks[self.rank]}", self.timeout, self.mpi).wait()
        if (rows == rows[0]).all():
            return
        raise DistributedError(mismatch_message(CALLS[row[0]], rows, self.ranks))

    def check_counts(self, call: str, send_counts: list[int], recv_counts: list[int]) -> None:
        """For all_to_all: what rank i sends to rank j must be what j expects from i."""
        size = len(send_counts)
        mine = np.array(list(send_counts) + list(recv_counts), dtype=np.int64)
        table = np.empty((size, 2 * size), dtype=np.int64)
        MPIWork([self.comm.Iallgather(mine, table)], f"{call}: checking the sizes on rank "
                f"{self.ranks[self.rank]}", self.timeout, self.mpi).wait()
        sends, recvs = table[:, :size], table[:, size:]
        bad = [(i, j) for i in range(size) for j in range(size) if sends[i, j] != recvs[j, i]]
        if bad:
            i, j = bad[0]
            raise DistributedError(
                f"{call}: rank {self.ranks[i]} sends {sends[i, j]} elements to rank "
                f"{self.ranks[j]}, which expects {recvs[j, i]} from it; output_tensor_list[i] "
                "on each rank must have the size of input_tensor_list[that rank] on rank i")

    def close(self) -> None:
        self.comm.Free()
