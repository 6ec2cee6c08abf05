"""A training run (support.resume_run's, longer) that SIGKILLs itself at a chosen instant,
for the kill-anywhere resume test: `python kill_run.py FOLDER MODE N`, where MODE is

- "batch": after the N-th batch this process trains,
- "write": in the N-th checkpoint write, with the temporary file written and synced but not
  yet renamed (so a temporary file is left behind),
- "prune": in the N-th checkpoint write, renamed but before the old checkpoints are pruned,
- "time": never by itself (the test kills it after a random delay; it prints "training" as
  the loop starts).
"""

from __future__ import annotations

import os
import signal
import sys

import dlfree.io.atomic as atomic
import dlfree.train.trainer as trainer_module

from support.resume_run import AtBatch, build, validation

EPOCHS = 8


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _nth(n: int, before):
    """A wrapper of `before`'s target that kills the process at its n-th call."""
    calls = [0]

    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == n:
            _kill()
        return before(*args, **kwargs)

    return wrapped


class Announce:
    def dlfree_train_start(self):
        print("training", flush=True)


def main(folder: str, mode: str, n: int) -> None:
    callbacks: list = [Announce()]
    if mode == "batch":
        callbacks.append(AtBatch(n, _kill))
    elif mode == "write":
        atomic.os.replace = _nth(n, os.replace)  # (atomic_write's rename)
    elif mode == "prune":
        trainer_module.prune = _nth(n, trainer_module.prune)
    trainer, data = build(folder, callbacks=callbacks, max_epochs=EPOCHS)
    trainer.fit(data, validation())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
