"""Process groups: `init_process_group` and the questions about the ranks (torch's names).

The world comes from MPI itself (`MPI.COMM_WORLD`), so `mpiexec -n 4 python train.py` and
SLURM's `srun` need no environment variables. mpi4py is imported here, on the first call
that needs it, never by `import dlfree`.
"""

from __future__ import annotations

import atexit
import datetime
import importlib.util
import os
import sys
import time
import traceback
import warnings

from ..errors import DistributedError
from .agreement import Agreement
from .mpi_engine import MPIEngine

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # torch's default for its process groups
BACKENDS = ("mpi", "nccl")
ABORT_GRACE_S = 0.5  # for mpiexec to forward a failing rank's traceback before the abort


def is_available() -> bool:
    """Whether dlfree.distributed can run here: mpi4py is installed (it is not imported)."""
    return importlib.util.find_spec("mpi4py") is not None


def load_mpi():
    """mpi4py's MPI module, with MPI initialized; a DistributedError saying what to install
    when mpi4py is missing."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise DistributedError(
            "dlfree.distributed needs mpi4py and an MPI library: pip install 'dlfree[mpi]' "
            "(mpi4py with the MPICH wheel, which brings mpiexec), or install mpi4py built "
            "against your cluster's MPI") from None
    from mpi4py import MPI

    if not MPI.Is_initialized():  # mpi4py's import did not (see info.engine_info)
        MPI.Init_thread()
        atexit.register(_finalize, MPI)
    return MPI


def _finalize(mpi) -> None:
    if mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()


class ProcessGroup:
    """Ranks that run collectives together.

    `rank` and `size` are this process's place in the group, `ranks` the global ranks of
    its members (group rank i is global rank `ranks[i]`). Collectives on CPU tensors run
    on the MPI engine; with backend "nccl", CUDA tensors run on the NCCL engine. A process
    that is not a member holds a group with `is_member` False.
    """

    def __init__(self, backend: str, ranks: list[int], comm=None, mpi=None,
                 timeout: float | None = None, nccl=None):
        self.backend = backend
        self.ranks = list(ranks)
        self.is_member = comm is not None
        self.timeout = timeout
        self.nccl = nccl
        if self.is_member:
            self.rank = comm.Get_rank()
            self.size = comm.Get_size()
            self.mpi = MPIEngine(comm, mpi, timeout)
            self.agreement = Agreement(comm.Dup(), mpi, self.ranks, timeout)
        else:
            self.rank, self.size = -1, len(self.ranks)
            self.mpi = self.agreement = None

    def engine_for(self, array):
        """The engine that runs a collective on `array`."""
        if self.nccl is not None and not type(array).__module__.startswith("numpy"):
            return self.nccl
        return self.mpi

    def group_rank(self, global_rank: int, what: str) -> int:
        """The group rank of `global_rank`, or a ValueError from `what` if it is no member."""
        if global_rank not in self.ranks:
            raise ValueError(f"{what}: rank {global_rank} is not in this process group "
                             f"(global ranks {self.ranks})")
        return self.ranks.index(global_rank)

    def close(self) -> None:
        if self.is_member:
            self.agreement.close()
            self.mpi.close()
            if self.nccl is not None:
                self.nccl.close()
        self.is_member = False

    def __repr__(self) -> str:
        where = f"rank {self.rank} of {self.size}" if self.is_member else "not a member"
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks}, {where})"


class _State:
    world: ProcessGroup | None = None
    groups: list[ProcessGroup] = []
    excepthook = None


STATE = _State()


def _seconds(timeout) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    raise ValueError(f"timeout must be a datetime.timedelta or a positive number of seconds, "
                     f"got {timeout!r}")


def init_process_group(backend: str | None = None, *, timeout=DEFAULT_TIMEOUT,
                       world_size: int | None = None, rank: int | None = None,
                       device_id: int | None = None) -> None:
    """Join the world of all processes that MPI started (`mpiexec`, `srun`).

    backend "mpi" runs every collective through MPI; "nccl" runs those on CUDA tensors
    through NCCL (CPU tensors still through MPI), each rank on GPU `device_id` (default:
    its rank among the ranks of its machine, modulo the GPUs there); None picks "nccl"
    when every rank has a GPU, else "mpi". `world_size` and `rank`, if given, must equal
    what MPI says (they exist so that torch-style scripts run unchanged). A collective
    waits at most `timeout` for the other ranks, then raises DistributedError.

    When there is more than one rank, an exception that nobody catches prints its
    traceback with the rank and then aborts every rank, so that the others do not stay
    blocked in a collective waiting for it.
    """
    if STATE.world is not None:
        raise DistributedError("init_process_group: the default process group is already "
                               "initialized; call destroy_process_group() first")
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"init_process_group: backend must be one of {BACKENDS} or None, got "
                         f"{backend!r}")
    seconds = _seconds(timeout)
    mpi = load_mpi()
    world = mpi.COMM_WORLD
    for name, given, actual in (("world_size", world_size, world.Get_size()),
                                ("rank", rank, world.Get_rank())):
        if given is not None and given != actual:
            raise DistributedError(
                f"init_process_group: {name}={given} was passed but MPI started this process "
                f"as {name} {actual}; leave {name} out (MPI decides it: mpiexec -n N)")
    if backend is None:
        from .nccl_engine import nccl_unavailable_reason

        backend = "nccl" if world.allreduce(nccl_unavailable_reason() is None,
                                            op=mpi.LAND) else "mpi"
    comm = world.Dup()
    nccl = _nccl_engine("init_process_group", comm, world, mpi, device_id, seconds) \
        if backend == "nccl" else None
    STATE.world = ProcessGroup(backend, list(range(world.Get_size())), comm, mpi, seconds,
                               nccl)
    if world.Get_size() > 1:
        _abort_on_uncaught_exceptions(mpi, world.Get_rank(), world.Get_size())


def _nccl_engine(what: str, comm, world, mpi, device_id, seconds):
    """An NCCL engine for the ranks of `comm`, on this rank's GPU (see init_process_group)."""
    from .nccl_engine import NCCLEngine, local_device, nccl_unavailable_reason

    reason = nccl_unavailable_reason()
    if reason is not None:
        raise DistributedError(f"{what}: backend 'nccl' cannot run on rank {world.Get_rank()}: "
                               f"{reason}; use backend 'mpi' (or None, which picks NCCL only "
                               "when every rank has a GPU)")
    return NCCLEngine(comm, local_device(world, mpi, device_id), seconds)


def _abort_on_uncaught_exceptions(mpi, rank: int, size: int) -> None:
    previous = sys.excepthook

    def hook(kind, value, tb):
        # one write, then a moment for the launcher to forward it: MPI_Abort makes mpiexec
        # kill the job, and output still in its pipes would be cut off mid-traceback
        message = "".join([
            f"dlfree.distributed: rank {rank} of {size} raised an uncaught {kind.__name__}:\n",
            *traceback.format_exception(kind, value, tb),
            f"dlfree.distributed: aborting all {size} ranks\n"])
        sys.stderr.flush()
        os.write(sys.stderr.fileno(), message.encode(errors="replace"))
        time.sleep(ABORT_GRACE_S)
        mpi.COMM_WORLD.Abort(1)
        os._exit(1)  # MPICH's Abort can return before its launcher has killed this process

    STATE.excepthook = previous
    sys.excepthook = hook


def is_initialized() -> bool:
    """Whether `init_process_group` has run (and `destroy_process_group` not since)."""
    return STATE.world is not None


def default_group(what: str) -> ProcessGroup:
    if STATE.world is None:
        raise DistributedError(f"{what}: the default process group is not initialized; call "
                               "dlfree.distributed.init_process_group() first")
    return STATE.world


def member_group(group: ProcessGroup | None, what: str) -> ProcessGroup:
    """The group a training wrapper (DDP, PeriodicAveraging, ...) works in, which this
    process must be a member of."""
    pg = default_group(what) if group is None else group
    if not isinstance(pg, ProcessGroup) or not pg.is_member:
        raise DistributedError(f"{what}: this process (global rank {get_rank()}) is not a "
                               f"member of {pg}; wrap the model on the group's ranks only")
    return pg


def resolve(group: ProcessGroup | None, what: str) -> ProcessGroup | None:
    """The group a call runs on; None (after a warning, as torch does) when this process
    is not a member of `group`."""
    pg = default_group(what) if group is None else group
    if not isinstance(pg, ProcessGroup):
        raise TypeError(f"{what}: group must be a ProcessGroup from new_group() or None, got "
                        f"{type(group).__name__}")
    if not pg.is_member:
        warnings.warn(f"{what}: this process (global rank {get_rank()}) is not a member of "
                      f"{pg}; nothing is done", UserWarning, stacklevel=3)
        return None
    return pg


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in `group` (the world by default); -1 if it is not a member."""
    pg = default_group("get_rank") if group is None else group
    return pg.rank


def get_world_size(group: ProcessGroup | None = None) -> int:
    """How many ranks `group` (the world by default) has."""
    pg = default_group("get_world_size") if group is None else group
    return pg.size


def get_backend(group: ProcessGroup | None = None) -> str:
    """"mpi" or "nccl"."""
    pg = default_group("get_backend") if group is None else group
    return pg.backend


def new_group(ranks=None, timeout=None, backend: str | None = None) -> ProcessGroup:
    """A group of the given global ranks (all by default). Every rank of the world must
    call it, with the same ranks, members or not, as in torch."""
    world = default_group("new_group")
    ranks = list(range(world.size)) if ranks is None else sorted(int(r) for r in ranks)
    if not ranks or len(set(ranks)) != len(ranks) or not 0 <= ranks[0] <= ranks[-1] < world.size:
        raise ValueError(f"new_group: ranks must be distinct global ranks in [0, "
                         f"{world.size - 1}], got {ranks}")
    backend = world.backend if backend is None else backend
    if backend not in BACKENDS:
        raise ValueError(f"new_group: backend must be one of {BACKENDS}, got {backend!r}")
    calls = world.mpi.all_gather_object(ranks)
    if any(c != ranks for c in calls):
        described = "; ".join(f"rank {r}: {c}" for r, c in enumerate(calls))
        raise DistributedError(f"new_group: the ranks passed different rank lists ({described})"
                               "; every rank must pass the same list")
    mpi = world.mpi.mpi
    member = world.rank in ranks
    comm = world.mpi.comm.Split(0 if member else mpi.UNDEFINED, world.rank)
    if not member:
        group = ProcessGroup(backend, ranks)
    else:
        seconds = world.timeout if timeout is None else _seconds(timeout)
        nccl = None
        if backend == "nccl":
            device = world.nccl.device_index if world.nccl is not None else None
            nccl = _nccl_engine("new_group", comm, world.mpi.comm, mpi, device, seconds)
        group = ProcessGroup(backend, ranks, comm, mpi, seconds, nccl)
    STATE.groups.append(group)
    return group


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Release `group`, or, by default, the world and every group made from it."""
    if group is not None:
        group.close()
        if group in STATE.groups:
            STATE.groups.remove(group)
        return
    for g in STATE.groups:
        g.close()
    STATE.groups = []
    if STATE.world is not None:
        STATE.world.close()
        STATE.world = None
    if STATE.excepthook is not None:
        sys.excepthook = STATE.excepthook
        STATE.excepthook = None
