"""The Trainer under `mpiexec -n 2` against the Trainer on one process.

- validation: the loss and metric states combined over the ranks equal one process's on
  the whole set, exactly for the counts (a fixed model, no training);
- DDP through the Trainer, with gradient accumulation (no_sync), clipping and a step
  scheduler: 2 ranks with batches of 8 end with the weights one process gets with batches
  of 16 (float64, rtol 1e-10), the same epoch losses too;
- the digits CNN trains to the single-process accuracy within 1 %, and progress, the
  report, the model files and the training checkpoints come from rank 0 alone;
- a 2-rank run resumed from its epoch-1 checkpoint ends with the uninterrupted run's
  weights, optimizer state and History.
Every rank trains the one-process reference itself (`strategy=None`).
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import dlfree as dl
import dlfree.distributed as dist
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset, random_split
from dlfree.data.datasets import Digits
from dlfree.metrics import Accuracy, MeanSquaredError

import numpy as np
import pytest

pytestmark = pytest.mark.mpi

RTOL = 1e-10


def _shared_dir() -> Path:
    """One temporary folder, the same on every rank (rank 0 makes it)."""
    box = [tempfile.mkdtemp(prefix="dtrain-") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box)
    return Path(box[0])


def _mlp(seed: int = 0) -> nn.Module:
    dl.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3)).double()


def _dataset(n: int, seed: int = 1) -> TensorDataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6))
    return TensorDataset(dl.tensor(x), dl.tensor((x[:, :3] + 0.5 * x[:, 3:]).argmax(1)))


def _assert_same(actual, expected, what: str) -> None:
    assert list(actual) == list(expected), what
    for name in actual:
        np.testing.assert_allclose(actual[name].numpy(), expected[name].numpy(), rtol=RTOL,
                                   atol=1e-14, err_msg=f"{what}: {name}")


def ranks_validation_is_the_whole_sets():
    data = DataLoader(_dataset(101), batch_size=16)  # shards of 51 and 50: uneven on purpose

    def scores(strategy):
        metrics = {"accuracy": Accuracy(task="multiclass", num_classes=3),
                   "macro": Accuracy(task="multiclass", num_classes=3, average="macro")}
        trainer = dl.train.Trainer(_mlp(), loss_fn=nn.CrossEntropyLoss(), metrics=metrics,
                                   strategy=strategy)
        return trainer.evaluate(data), trainer

    alone, _ = scores(None)
    together, trainer = scores("ddp")
    assert trainer.parallel.world == 2 and trainer.parallel.active
    assert together["accuracy"] == alone["accuracy"]  # counts: exact
    assert together["macro"] == alone["macro"]
    np.testing.assert_allclose(together["loss"], alone["loss"], rtol=1e-12)
    # a metric whose state is a weighted mean, on outputs that differ per sample
    mse = MeanSquaredError()
    mine = [(i, x) for i, x in enumerate(_dataset(101).tensors[0].numpy())
            if i % 2 == dist.get_rank()]
    mse.update(dl.tensor(np.array([x[0] for _, x in mine])),
               dl.tensor(np.array([x[1] for _, x in mine])))
    trainer.parallel.sync_metric("mse", mse)
    whole = _dataset(101).tensors[0].numpy()
    np.testing.assert_allclose(float(mse.compute()), np.mean((whole[:, 0] - whole[:, 1]) ** 2),
                               rtol=1e-6)


def _fit(strategy, batch: int, epochs: int = 2, checkpoint_dir=None, callbacks=()):
    model = _mlp()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trainer = dl.train.Trainer(
        model, optimizer, nn.CrossEntropyLoss(), max_epochs=epochs, grad_accumulation=2,
        grad_clip_norm=0.5, scheduler=optim.lr_scheduler.StepLR(optimizer, 3, gamma=0.5),
        scheduler_interval="step", seed=0, strategy=strategy, checkpoint_dir=checkpoint_dir,
        callbacks=list(callbacks))
    # in order, so that batch b of one process is batches b of the two ranks together
    trainer.fit(DataLoader(_dataset(128), batch_size=batch))
    return trainer


def ranks_ddp_through_the_trainer_equals_one_process():
    alone = _fit(None, batch=16)
    together = _fit("auto", batch=8)
    assert type(together.train_model).__name__ == "DistributedDataParallel"
    _assert_same(together.model.state_dict(), alone.model.state_dict(), "weights")
    np.testing.assert_allclose(together.history["loss"].values, alone.history["loss"].values,
                               rtol=RTOL)
    assert together.state.global_step == alone.state.global_step == 8


def ranks_resume_continues_as_the_uninterrupted_run():
    folder = _shared_dir()
    whole = _fit("ddp", batch=8, epochs=3)
    first = _fit("ddp", batch=8, epochs=1, checkpoint_dir=folder)
    assert first.state.epoch == 1
    resumed = _fit("ddp", batch=8, epochs=3, checkpoint_dir=folder)
    _assert_same(resumed.model.state_dict(), whole.model.state_dict(), "weights")
    _assert_same(dict(enumerate(p for g in resumed.optimizer.state.values()
                                for p in g.values() if isinstance(p, dl.Tensor))),
                 dict(enumerate(p for g in whole.optimizer.state.values()
                                for p in g.values() if isinstance(p, dl.Tensor))), "momenta")
    assert resumed.history["loss"].values == whole.history["loss"].values
    assert resumed.state.global_step == whole.state.global_step
    dist.barrier()
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["checkpoint-000000008.safetensors", "checkpoint-000000012.safetensors"], \
        files  # rank 0's newest two: epochs 2 and 3 (4 steps each)


def _digits(channels: int = 8):
    digits = Digits()
    train, held_out = random_split(digits, [0.8, 0.2], generator=dl.Generator().manual_seed(0))
    pixels = digits.data[train.indices].astype(np.float32) / 16
    mean, std = float(pixels.mean()), float(pixels.std())
    digits.transform = lambda image: (image - mean) / std
    dl.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * channels * 4, 10))
    return train, held_out, model


def _train_digits(strategy, batch: int, out: Path | None = None, epochs: int = 4):
    train, held_out, model = _digits()
    callbacks: list = []
    progress = io.StringIO()
    if out is not None:
        callbacks = [dl.train.ProgressBar(file=progress, bar=False),
                     dl.train.ModelCheckpoint(out / "models", monitor="val_accuracy",
                                              mode="max"),
                     dl.train.HTMLReport(out / "report.html")]
    trainer = dl.train.Trainer(
        model, optim.AdamW(model.parameters(), lr=5e-3), nn.CrossEntropyLoss(),
        metrics={"accuracy": Accuracy(task="multiclass", num_classes=10)}, max_epochs=epochs,
        seed=0, strategy=strategy, callbacks=callbacks, run_dir=out,
        checkpoint_dir=None if out is None else out / "state")
    trainer.fit(DataLoader(train, batch_size=batch, shuffle=True),
                DataLoader(held_out, batch_size=256))
    return trainer, progress.getvalue()


def ranks_the_digits_cnn_trains_as_on_one_process_with_rank_0_writing():
    out = _shared_dir()
    alone, _ = _train_digits(None, batch=32)
    together, progress = _train_digits("auto", batch=16, out=out)
    single, both = alone.history["val_accuracy"].last, together.history["val_accuracy"].last
    print(f"digits: val_accuracy {both:.4f} on 2 ranks, {single:.4f} on one process")
    assert both >= 0.95 and abs(both - single) <= 0.01, (both, single)
    checkpoints = together.callbacks[1]
    dist.barrier()  # rank 0's files are all written
    if dist.get_rank() == 0:
        assert len(progress.strip().splitlines()) == 4, progress  # one line per epoch
        assert checkpoints.best_epoch is not None
    else:
        assert progress == "" and checkpoints.best_epoch is None  # its callbacks never ran
    assert sorted(p.name for p in out.iterdir()) == ["models", "report.html", "state"]
    assert sorted(p.name for p in (out / "models").iterdir()) == ["best.safetensors",
                                                                  "last.safetensors"]
    assert len(list((out / "state").iterdir())) == 2  # the newest two training checkpoints


def test_validation_is_the_whole_sets(mpi_job):
    mpi_job.check(ranks_validation_is_the_whole_sets)


def test_ddp_through_the_trainer_equals_one_process(mpi_job):
    mpi_job.check(ranks_ddp_through_the_trainer_equals_one_process)


def test_resume_continues_as_the_uninterrupted_run(mpi_job):
    mpi_job.check(ranks_resume_continues_as_the_uninterrupted_run)


def test_the_digits_cnn_trains_as_on_one_process_with_rank_0_writing(mpi_job):
    mpi_job.check(ranks_the_digits_cnn_trains_as_on_one_process_with_rank_0_writing)
