"""What the timings depend on: the machine, library versions, BLAS and thread-pool sizes."""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import platform

# Variables that change the BLAS and OpenMP thread pools, the BLAS kernels, or malloc.
TUNING_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "OPENBLAS_CORETYPE", "OPENBLAS_THREAD_TIMEOUT", "DLFREE_NUM_THREADS",
                    "GLIBC_TUNABLES")
# References whose speed is NumPy's and its BLAS's, and those that run on torch's kernels.
NUMPY_BASED = {"dlfree", "numpy"}
TORCH_BASED = {"torch", "torch_optimizer", "transformers", "torch_geometric"}


def machine() -> dict:
    """The coordinator's view: Python, OS, CPUs, how busy they are, the tuning variables set."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
        "tuning_variables": {v: os.environ[v] for v in TUNING_VARIABLES if v in os.environ},
    }


def describe(framework: str) -> dict:
    """Versions and thread counts seen from inside a worker that has loaded `framework`.

    dl.free and NumPy run on NumPy's BLAS, so they report it; torch and the libraries built
    on it report torch's version and thread pools, plus their own version; any other
    reference reports the version of the distribution that provides it.
    """
    if framework in NUMPY_BASED:
        info = numpy_blas()
        if framework == "dlfree":
            import dlfree

            info["dlfree"] = dlfree.__version__
            info["dlfree_threads"] = dlfree.get_num_threads()
        return info
    if framework in TORCH_BASED:
        import torch

        info = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                "torch_interop_threads": torch.get_num_interop_threads()}
        if framework != "torch":
            info[framework] = distribution_version(framework)
        return info
    return {framework: distribution_version(framework)}


def distribution_version(module: str) -> str:
    """The version of the installed distribution that provides the top-level `module`
    (torch_optimizer comes from torch-optimizer, for example)."""
    distributions = importlib.metadata.packages_distributions().get(module, [module])
    return importlib.metadata.version(distributions[0])


def numpy_blas() -> dict:
    """NumPy's version and BLAS as built, plus the BLAS's thread count as running now."""
    import numpy as np

    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return {"numpy": np.__version__, "blas": blas.get("name"),
            "blas_version": blas.get("version"),
            "blas_config": blas.get("openblas configuration"), **_openblas_runtime()}


def _openblas_runtime() -> dict:
    """Ask the loaded OpenBLAS (found in /proc/self/maps, so Linux) for its threads and kernel."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line}
    except OSError:
        return {}
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        # the symbol names depend on how OpenBLAS was built (64-bit ints, scipy's prefix)
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get_threads = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if get_threads is None:
                    continue
                get_core = getattr(lib, f"{prefix}_get_corename{suffix}")
                get_core.restype = ctypes.c_char_p
                return {"blas_threads": get_threads(), "blas_core": get_core().decode()}
    return {}
