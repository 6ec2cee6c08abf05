"""`Trainer(strategy="parameter_server")` under `mpiexec -n 3`: rank 0 serves, ranks 1 and 2
train.

- max_staleness 0: synchronous SGD with momentum on the mean of the two workers' gradients,
  so every rank (the server too) ends with the weights one process gets on the combined
  batches (float64, rtol 1e-10), with the same epoch losses and validation values; the
  progress lines come from the first worker alone, and `evaluate` after `fit` runs on
  every rank with the final weights;
- max_staleness 2 drives a consistent least-squares problem to its minimum (atol 1e-5);
- the settings it cannot honour are refused when the Trainer is made;
- a callback raising on a worker ends the whole job (the server waiting in its loop and the
  other worker in a step included) within 30 s.
Every test's ranks return from `fit` (the harness fails a job that hangs).
"""

from __future__ import annotations

import io

import dlfree as dl
import dlfree.distributed as dist
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset
from dlfree.metrics import Accuracy

import numpy as np
import pytest

from support.mpi import run_failing_trainer

pytestmark = pytest.mark.mpi
WORLD_SIZES = (3,)
RTOL = 1e-10


def _mlp() -> nn.Module:
    dl.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3)).double()


def _dataset(n: int, seed: int) -> TensorDataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6))
    return TensorDataset(dl.tensor(x), dl.tensor((x[:, :3] + 0.5 * x[:, 3:]).argmax(1)))


def _fit(strategy, batch: int, progress=None):
    model = _mlp()
    trainer = dl.train.Trainer(
        model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), nn.CrossEntropyLoss(),
        metrics={"accuracy": Accuracy(task="multiclass", num_classes=3)}, max_epochs=2,
        seed=0, strategy=strategy, strategy_options={"max_staleness": 0} if strategy else None,
        callbacks=[] if progress is None else [dl.train.ProgressBar(file=progress, bar=False)])
    # in order: batch b of one process is batch b of the two workers together
    trainer.fit(DataLoader(_dataset(96, 1), batch_size=batch),
                DataLoader(_dataset(41, 2), batch_size=8))
    return trainer


def ranks_synchronous_parameter_server_equals_one_process():
    alone = _fit(None, batch=16)
    progress = io.StringIO()
    together = _fit("parameter_server", batch=8, progress=progress)
    rank = dist.get_rank()
    for name, value in together.model.state_dict().items():  # the server's too
        np.testing.assert_allclose(value.numpy(), alone.model.state_dict()[name].numpy(),
                                   rtol=RTOL, atol=1e-14, err_msg=name)
    if rank == 0:  # the server ran no training loop of its own
        assert together.state.global_step == 0 and "loss" not in together.history
    else:
        assert together.state.global_step == alone.state.global_step == 12
        for name in ("loss", "val_loss", "val_accuracy"):
            np.testing.assert_allclose(together.history[name].values,
                                       alone.history[name].values, rtol=RTOL, err_msg=name)
        assert together.parallel.world == 3 and together.parallel.rank == rank  # restored
    lines = progress.getvalue().strip().splitlines()
    assert len(lines) == (2 if rank == 1 else 0), (rank, lines)  # the first worker's alone
    scores = together.evaluate(DataLoader(_dataset(41, 2), batch_size=8))  # every rank
    np.testing.assert_allclose(scores["accuracy"], alone.history["val_accuracy"].last,
                               rtol=RTOL)


def ranks_stale_parameter_server_reaches_the_minimum():
    rng = np.random.default_rng(11)
    w_star = rng.standard_normal((1, 5))
    x = rng.standard_normal((64, 5))
    data = TensorDataset(dl.tensor(x), dl.tensor(x @ w_star.T))  # consistent: one minimiser
    dl.manual_seed(0)
    model = nn.Linear(5, 1, bias=False).double()
    trainer = dl.train.Trainer(
        model, optim.SGD(model.parameters(), lr=0.05), nn.MSELoss(), max_epochs=40, seed=0,
        strategy="parameter_server", strategy_options={"servers": 1, "max_staleness": 2})
    trainer.fit(DataLoader(data, batch_size=8, shuffle=True))
    np.testing.assert_allclose(model.weight.detach().numpy(), w_star, atol=1e-5)


def ranks_settings_it_cannot_honour_are_refused():
    model = _mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    scheduler = optim.lr_scheduler.StepLR(optimizer, 3)
    for settings, what in (({"grad_accumulation": 2}, "grad_accumulation"),
                           ({"amp": True}, "amp"), ({"scheduler": scheduler}, "a scheduler"),
                           ({"checkpoint_dir": "state"}, "checkpoint_dir")):
        with pytest.raises(ValueError, match=f"parameter_server' does not support {what}"):
            dl.train.Trainer(model, optimizer, nn.CrossEntropyLoss(),
                             strategy="parameter_server", **settings)
    with pytest.raises(ValueError, match="does not support no optimizer"):
        dl.train.Trainer(model, step_fn=lambda trainer, batch: None,
                         strategy="parameter_server")
    with pytest.raises(ValueError, match=r"takes strategy_options .* got \['period'\]"):
        dl.train.Trainer(model, optimizer, strategy="parameter_server",
                         strategy_options={"period": 2})


def test_synchronous_parameter_server_equals_one_process(mpi_job):
    mpi_job.check(ranks_synchronous_parameter_server_equals_one_process)


def test_stale_parameter_server_reaches_the_minimum(mpi_job):
    mpi_job.check(ranks_stale_parameter_server_reaches_the_minimum)


def test_settings_it_cannot_honour_are_refused(mpi_job):
    mpi_job.check(ranks_settings_it_cannot_honour_are_refused)


def test_an_exception_on_a_worker_ends_every_rank(tmp_path, mpiexec):
    seconds, done = run_failing_trainer(mpiexec, tmp_path, size=3, rank=2,
                                        options=', strategy="parameter_server"')
    assert seconds < 30
    assert done.returncode != 0
    # the callback's error, wrapped by the Trainer to name the callback
    raised = "rank 2 of 3 raised an uncaught CallbackError[RuntimeError]"
    assert done.stderr.count(raised) == 1, done.stderr
    assert "rank 0 of 3 raised" not in done.stderr and "rank 1 of 3 raised" not in done.stderr
