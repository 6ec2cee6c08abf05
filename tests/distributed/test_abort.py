"""An exception nobody catches on one rank aborts the whole job (with the rank and the
traceback printed), instead of leaving the other ranks blocked in a collective."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.mpi

SCRIPT = textwrap.dedent("""
    import dlfree as dl
    import dlfree.distributed as dist

    dist.init_process_group("mpi")
    if dist.get_rank() == 1:
        raise ValueError("boom on rank 1")
    dist.all_reduce(dl.ones(3))  # rank 0 would wait here forever
""")


def test_an_uncaught_exception_on_one_rank_aborts_every_rank(tmp_path, mpiexec):
    script = tmp_path / "fail.py"
    script.write_text(SCRIPT)
    started = time.monotonic()
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert time.monotonic() - started < 30
    assert "rank 1 of 2 raised an uncaught ValueError" in done.stderr
    assert "boom on rank 1" in done.stderr and "aborting all 2 ranks" in done.stderr
