"""A Trainer whose callback raises on rank 1 of 2 ends the whole job within 30 s, the rank
and the traceback printed once, while rank 0 is training (and waiting in DDP's collectives)."""

from __future__ import annotations

import pytest

from support.mpi import run_failing_trainer

pytestmark = pytest.mark.mpi


def test_an_exception_on_one_rank_ends_every_rank(tmp_path, mpiexec):
    seconds, done = run_failing_trainer(mpiexec, tmp_path, size=2, rank=1)
    assert seconds < 30
    assert done.returncode != 0
    # the callback's error, wrapped by the Trainer to name the callback
    raised = "rank 1 of 2 raised an uncaught CallbackError[RuntimeError]"
    assert done.stderr.count(raised) == 1, done.stderr
    # (the launcher may cut the tail of rank 1's traceback when the abort kills the job, so
    # only the header, printed first, is counted)
    assert "rank 0 of 2 raised" not in done.stderr
