"""Fixtures of the `mpi` tests: `mpi_job` runs a test module's rank functions as one MPI
job per world size (support/mpi.py says how), and `mpiexec` is the launcher's path."""

from __future__ import annotations

import pytest

from support import mpi


def pytest_generate_tests(metafunc):
    if "mpi_job" in metafunc.fixturenames:
        sizes = mpi.world_sizes(metafunc.module)
        metafunc.parametrize("world_size", sizes, ids=[f"{n}ranks" for n in sizes])


@pytest.fixture
def mpiexec() -> str:
    """The mpiexec to launch jobs with."""
    return mpi.mpiexec_path()


@pytest.fixture
def mpi_job(request, world_size, tmp_path_factory) -> mpi.Job:
    """The module's rank functions, run once per world size under mpiexec."""
    return mpi.job_for(request.module, world_size, tmp_path_factory)
