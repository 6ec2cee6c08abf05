"""The Ctrl-C matrix: a SIGINT at each point of `fit` ends with a consistent checkpoint and
`trainer.interrupted`, and the resumed run ends bit-identical to an uninterrupted one; before
training begins (while resuming) the KeyboardInterrupt is raised instead."""

from __future__ import annotations

import os
import signal

import dlfree.train.trainer as trainer_module
from dlfree.train.state_file import checkpoint_paths, read_checkpoint

import numpy as np
import pytest

from support.resume_run import build, validation, weights


def _sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture(autouse=True)
def default_sigint_handler():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def reference():
    trainer, data = build()
    trainer.fit(data, validation())
    return weights(trainer), trainer.history.state_dict()


class AtTrainStart:
    def dlfree_train_start(self):
        _sigint()


class InBatch:
    """SIGINT while batch `at` (0-based over the run) is being processed."""

    def __init__(self, at: int):
        self.at, self.seen = at, 0

    def dlfree_train_batch_start(self):
        if self.seen == self.at:
            _sigint()
        self.seen += 1


class AtTrainEnd:
    def dlfree_train_end(self):
        _sigint()


class InterruptingValidation:
    """Validation data whose iteration sends SIGINT in the middle, the first time."""

    def __init__(self):
        self.loader, self.sent = validation(), False

    def __iter__(self):
        for i, batch in enumerate(self.loader):
            if i == 0 and not self.sent:
                self.sent = True
                _sigint()
            yield batch


def _resume_matches(folder, reference) -> None:
    trainer, data = build(folder, init_seed=99)
    trainer.fit(data, validation())
    assert not trainer.interrupted
    want_weights, want_history = reference
    got = weights(trainer)
    assert all(np.array_equal(got[k], v) for k, v in want_weights.items())
    assert trainer.history.state_dict() == want_history


def _no_temporaries(folder) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("point, expect", [
    ("before the first batch", (0, 0, 0)),
    # batch 9 of the run (0-based) completes: epoch 1's fourth of 7; 5 steps of 2 batches
    ("inside a batch", (1, 3, 5)),
    ("during validation", (1, 0, 4)),  # the first epoch (7 batches, 4 steps) ends
    ("in dlfree_train_end", (3, 0, 12)),  # all 3 epochs done
])
def test_sigint_at_each_point_saves_a_checkpoint_and_resumes(tmp_path, reference, point,
                                                             expect):
    callbacks = {"before the first batch": [AtTrainStart()], "inside a batch": [InBatch(9)],
                 "in dlfree_train_end": [AtTrainEnd()]}.get(point, [])
    val = InterruptingValidation() if point == "during validation" else validation()
    trainer, data = build(tmp_path, callbacks=callbacks)
    trainer.fit(data, val)
    assert trainer.interrupted
    state = trainer.state
    assert (state.epoch, state.batch_index, state.global_step) == expect
    saved, _ = read_checkpoint(checkpoint_paths(tmp_path)[0])
    assert saved["trainer"]["global_step"] == state.global_step
    assert saved["trainer"]["batch_index"] == state.batch_index
    _no_temporaries(tmp_path)
    _resume_matches(tmp_path, reference)


def test_sigint_while_a_checkpoint_is_written_lets_it_complete(tmp_path, reference,
                                                               monkeypatch):
    real = trainer_module.write_checkpoint
    calls = []

    def write_and_interrupt(path, state, tensors):
        calls.append(path.name)
        if len(calls) == 2:
            _sigint()  # arrives in the middle of this write
        real(path, state, tensors)

    monkeypatch.setattr(trainer_module, "write_checkpoint", write_and_interrupt)
    trainer, data = build(tmp_path)
    trainer.fit(data, validation())
    assert trainer.interrupted and trainer.state.global_step == 4
    assert calls[1] == "checkpoint-000000004.safetensors"
    assert checkpoint_paths(tmp_path)[0].name == calls[1]
    read_checkpoint(checkpoint_paths(tmp_path)[0])  # complete and readable
    _no_temporaries(tmp_path)
    monkeypatch.setattr(trainer_module, "write_checkpoint", real)
    _resume_matches(tmp_path, reference)


def test_sigint_while_resuming_raises_keyboard_interrupt(tmp_path, monkeypatch):
    trainer, data = build(tmp_path, max_epochs=1)
    trainer.fit(data)

    def interrupted(*args, **kwargs):
        _sigint()

    monkeypatch.setattr(trainer_module, "newest_valid", interrupted)
    again, data = build(tmp_path, max_epochs=2)
    with pytest.raises(KeyboardInterrupt):
        again.fit(data)
