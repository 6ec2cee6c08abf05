"""Interrupt a training run with Ctrl-C, start it again, and end bit for bit where an
uninterrupted run ends.

With `checkpoint_dir=`, the Trainer writes a training checkpoint (weights, gradients,
optimizer and scheduler state, the data order, the RNG state, the History) atomically
at each epoch's end and every few steps. Ctrl-C (SIGINT) stops the run after the batch
in progress and saves one more; `fit` returns with `trainer.interrupted` set. A new
Trainer on the same folder resumes from the newest good checkpoint, in the middle of an
epoch if need be. Here a callback sends the SIGINT itself, at a chosen step, to a run
that has everything random in it: dropout, a shuffled data order, weight decay and a
learning-rate schedule. The resumed run's final weights equal those of a run that was
never interrupted, bit for bit.

    python examples/resume.py [--epochs N] [--interrupt-at STEP]
"""

import argparse
import signal
import tempfile
from pathlib import Path

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset
from dlfree.data.datasets import Digits

import numpy as np


class CtrlCAt:
    """A training callback that presses Ctrl-C (raises SIGINT in this process) once the
    optimizer has taken `step` steps."""

    def __init__(self, step: int):
        self.step = step

    def dlfree_train_batch_end(self, trainer):
        if trainer.state.global_step == self.step:
            signal.raise_signal(signal.SIGINT)


def digits() -> TensorDataset:
    """The digits as flat standardised vectors (64 values) and their labels."""
    data = Digits()
    pixels = data.data.reshape(len(data), -1).astype(np.float32)
    return TensorDataset(dl.tensor((pixels - pixels.mean()) / pixels.std()),
                         dl.tensor(data.targets))


def run(epochs: int, checkpoint_dir=None, callbacks=(), init_seed: int = 0):
    """A Trainer for a dropout MLP (weights drawn from `init_seed`) and its data loader."""
    dl.manual_seed(init_seed)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    schedule = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    trainer = dl.train.Trainer(model, optimizer, nn.CrossEntropyLoss(), scheduler=schedule,
                               max_epochs=epochs, seed=0, checkpoint_dir=checkpoint_dir,
                               checkpoint_every_n_steps=10, callbacks=list(callbacks))
    return trainer, DataLoader(digits(), batch_size=64, shuffle=True)


def weights(model) -> dict[str, np.ndarray]:
    return {name: value.numpy().copy() for name, value in model.state_dict().items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--interrupt-at", type=int, default=50,
                        help="the optimizer step after which Ctrl-C comes (default 50)")
    args = parser.parse_args(argv)

    trainer, data = run(args.epochs)
    trainer.fit(data)
    uninterrupted = weights(trainer.model)
    total = trainer.state.global_step
    print(f"uninterrupted: {total} steps, final loss {trainer.history['loss'].last:.4f}")

    with tempfile.TemporaryDirectory() as folder:
        trainer, data = run(args.epochs, folder, callbacks=[CtrlCAt(args.interrupt_at)])
        trainer.fit(data)
        state = trainer.state
        print(f"interrupted:   {trainer.interrupted} at step {state.global_step}, after batch "
              f"{state.batch_index} of {state.steps_per_epoch} in epoch {state.epoch + 1}; "
              f"checkpoints: {', '.join(sorted(p.name for p in Path(folder).iterdir()))}")

        # A new Trainer, as after a restart; its own initial weights are replaced.
        trainer, data = run(args.epochs, folder, init_seed=1)
        trainer.fit(data)
        resumed = weights(trainer.model)
        print(f"resumed:       finished at step {trainer.state.global_step}, final loss "
              f"{trainer.history['loss'].last:.4f}")

    largest = max(float(np.abs(resumed[k] - uninterrupted[k]).max()) for k in uninterrupted)
    identical = all(np.array_equal(resumed[k], uninterrupted[k]) for k in uninterrupted)
    print(f"largest weight difference {largest:g}; bit-identical to the uninterrupted run: "
          f"{identical}")


if __name__ == "__main__":
    main()
