"""What `dlfree env` and `dlfree plugins` report about the distributed engines."""

from __future__ import annotations

import importlib.metadata
import sys


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def engine_info() -> dict:
    """The MPI library (name and version, the MPI standard it implements, whether it is
    CUDA-aware) and NCCL's version, each None when missing.

    MPI is not initialized for this: when mpi4py's MPI module has not been imported yet
    it is imported without initializing MPI (init_process_group initializes it later),
    and CUDA-awareness is read from a short MPI session's memory-allocation kinds (MPI 4.1).
    """
    from .nccl_engine import nccl_version

    info = {"mpi4py": _version("mpi4py"), "mpi_library": None, "mpi_standard": None,
            "mpi_cuda_aware": None, "nccl": nccl_version()}
    if info["mpi4py"] is None:
        return info
    try:
        if "mpi4py.MPI" not in sys.modules:
            import mpi4py

            mpi4py.rc.initialize = False
        from mpi4py import MPI
    except (ImportError, RuntimeError) as e:  # mpi4py present, its MPI library not loadable
        info["mpi_library"] = f"unusable ({e})"
        return info
    from .mpi_engine import is_cuda_aware, memory_kinds

    first = MPI.Get_library_version().strip().splitlines()[0]
    info["mpi_library"] = " ".join(first.replace("Version:", "").split()).rstrip(",")
    info["mpi_standard"] = "{}.{}".format(*MPI.Get_version())
    kinds = memory_kinds(MPI, MPI.COMM_WORLD if MPI.Is_initialized() else None)
    info["mpi_cuda_aware"] = None if kinds is None else is_cuda_aware(kinds)
    return info


def engine_lines(info: dict) -> list[str]:
    """`engine_info()` as the lines the command line prints."""
    if info["mpi4py"] is None:
        mpi = "not installed (pip install 'dlfree[mpi]')"
    elif info["mpi_library"] is None or info["mpi_standard"] is None:
        mpi = f"mpi4py {info['mpi4py']}, MPI library {info['mpi_library']}"
    else:
        aware = {True: "yes", False: "no", None: "unknown"}[info["mpi_cuda_aware"]]
        mpi = (f"{info['mpi_library']} (MPI {info['mpi_standard']}, mpi4py {info['mpi4py']}), "
               f"CUDA-aware: {aware}")
    nccl = info["nccl"] or "not installed (comes with CuPy: pip install 'dlfree[cuda12]')"
    return ["distributed:", f"  mpi: {mpi}", f"  nccl: {nccl}"]
