"""A Trainer whose callback raises on rank 1 of 2 ends the whole job within 30 s, the rank
and the traceback printed once, while rank 0 is training (and waiting in DDP's collectives)."""

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
    from dlfree import nn, optim
    from dlfree.data import DataLoader, TensorDataset

    class Boom:
        def dlfree_train_batch_end(self, trainer, batch, batch_index, loss, outputs):
            if dist.get_rank() == 1 and batch_index == 3:
                raise RuntimeError("boom in a callback on rank 1")

    data = TensorDataset(dl.randn(256, 4), dl.randint(0, 2, (256,)))
    model = nn.Linear(4, 2)
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), max_epochs=1000, callbacks=[Boom()])
    trainer.fit(DataLoader(data, batch_size=8, shuffle=True))
""")


def test_an_exception_on_one_rank_ends_every_rank(tmp_path, mpiexec):
    script = tmp_path / "fail.py"
    script.write_text(SCRIPT)
    started = time.monotonic()
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 30
    assert done.returncode != 0
    # the callback's error, wrapped by the Trainer to name the callback
    raised = "rank 1 of 2 raised an uncaught CallbackError[RuntimeError]"
    assert done.stderr.count(raised) == 1, done.stderr
    # (the launcher may cut the tail of rank 1's traceback when the abort kills the job, so
    # only the header, printed first, is counted)
    assert "rank 0 of 2 raised" not in done.stderr
