"""A small training run in which everything random matters (dropout, a shuffling DataLoader
on the global RNG, Adam, a per-step scheduler, gradient accumulation), for the resume tests.

Run as a script (`python resume_run.py CHECKPOINT_DIR KILL_AT`), it trains with
checkpoints and SIGKILLs itself after batch number KILL_AT (counted from 1 over the run).
"""

from __future__ import annotations

import os
import signal
import sys

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset

import numpy as np

BATCHES_PER_EPOCH = 7
EPOCHS = 3


def dataset() -> TensorDataset:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(40, 5)).astype("float32")
    y = (x @ rng.normal(size=(5, 3))).argmax(1)
    return TensorDataset(dl.tensor(x), dl.tensor(y))


def build(checkpoint_dir=None, callbacks=(), init_seed: int = 0, data=None,
          **options) -> tuple[dl.train.Trainer, object]:
    """(trainer, training data); `init_seed` seeds the initial weights, which a resumed run
    must replace with the checkpoint's."""
    dl.manual_seed(init_seed)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.7)
    settings = {"scheduler": scheduler, "scheduler_interval": "step", "max_epochs": EPOCHS,
                "grad_accumulation": 2, "seed": 123, "checkpoint_dir": checkpoint_dir,
                "checkpoint_every_n_steps": 2, "callbacks": list(callbacks), **options}
    trainer = dl.train.Trainer(model, optimizer, nn.CrossEntropyLoss(), **settings)
    if data is None:
        data = DataLoader(dataset(), batch_size=6, shuffle=True)
    return trainer, data


def validation() -> DataLoader:
    return DataLoader(dataset(), batch_size=20)


def weights(trainer) -> dict[str, np.ndarray]:
    return {k: v.numpy().copy() for k, v in trainer.model.state_dict().items()}


class AtBatch:
    """Calls `action()` at the end of the `at`-th batch of the run (counted from 1)."""

    def __init__(self, at: int, action):
        self.at, self.action, self.seen = at, action, 0

    def dlfree_train_batch_end(self):
        self.seen += 1
        if self.seen == self.at:
            self.action()


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    checkpoint_dir, kill_at = sys.argv[1], int(sys.argv[2])
    trainer, data = build(checkpoint_dir, callbacks=[AtBatch(kill_at, _kill)])
    trainer.fit(data, validation())
    sys.exit("the run was not killed")
