"""Resumable training: a run interrupted (KeyboardInterrupt, SIGINT, SIGKILL) and resumed ends
bit-identical to an uninterrupted one; bad checkpoints are refused for the previous good one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import dlfree as dl
from dlfree.train import ResumeWarning, read_checkpoint, write_checkpoint
from dlfree.train.state_file import checkpoint_paths, pack, unpack

import numpy as np
import pytest

from support import resume_run
from support.resume_run import AtBatch, build, validation, weights


@pytest.fixture(scope="module")
def reference():
    """Weights and History of the uninterrupted run (no checkpoints written)."""
    trainer, data = build()
    trainer.fit(data, validation())
    return weights(trainer), trainer.history.state_dict()


def _raise_keyboard_interrupt():
    raise KeyboardInterrupt


def _resume_and_compare(folder, reference, **options):
    trainer, data = build(folder, init_seed=99, **options)
    trainer.fit(data, validation())
    assert not trainer.interrupted
    want_weights, want_history = reference
    got = weights(trainer)
    assert got.keys() == want_weights.keys()
    for name, value in want_weights.items():
        assert np.array_equal(got[name], value), f"{name} differs after resuming"
    assert trainer.history.state_dict() == want_history
    return trainer


def _interrupt(folder, at: int, action=_raise_keyboard_interrupt):
    trainer, data = build(folder, callbacks=[AtBatch(at, action)])
    trainer.fit(data, validation())
    assert trainer.interrupted
    return trainer


@pytest.mark.parametrize("at", [10, 14], ids=["mid-accumulation", "last-batch-of-epoch"])
def test_keyboard_interrupt_saves_and_resumes_bit_identical(tmp_path, reference, at):
    interrupted = _interrupt(tmp_path, at)
    assert interrupted.state.epoch * 7 + interrupted.state.batch_index == at
    newest = checkpoint_paths(tmp_path)[0]
    state, _ = read_checkpoint(newest)
    assert state["trainer"]["global_step"] == interrupted.state.global_step
    assert len(checkpoint_paths(tmp_path)) == 2  # the newest and the one before
    _resume_and_compare(tmp_path, reference)


def test_sigint_stops_after_the_batch_and_resumes_bit_identical(tmp_path, reference):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupted = _interrupt(tmp_path, 9, lambda: os.kill(os.getpid(), signal.SIGINT))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (interrupted.state.epoch, interrupted.state.batch_index) == (1, 2)
    assert signal.getsignal(signal.SIGINT) is previous
    _resume_and_compare(tmp_path, reference)


def test_sigkill_between_checkpoints_resumes_bit_identical(tmp_path, reference):
    script = Path(resume_run.__file__)
    done = subprocess.run([sys.executable, str(script), str(tmp_path), "13"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    state, _ = read_checkpoint(checkpoint_paths(tmp_path)[0])
    assert state["trainer"]["global_step"] == 6  # the step-6 checkpoint, mid-epoch 1
    assert state["trainer"]["batch_index"] == 4
    _resume_and_compare(tmp_path, reference)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # tensor data: the file still parses, only the digest notices
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _flip_last_byte], ids=["truncated", "corrupt"])
def test_damaged_newest_checkpoint_falls_back_to_the_previous(tmp_path, reference, damage):
    _interrupt(tmp_path, 10)
    newest, _ = checkpoint_paths(tmp_path)
    damage(newest)
    with pytest.warns(ResumeWarning, match=rf"refusing training checkpoint .*{newest.name}"):
        resumed = _resume_and_compare(tmp_path, reference)
    assert resumed.history["step_loss"].steps[0] == 1


def test_interrupt_in_the_middle_of_a_batch_writes_nothing_and_resumes(tmp_path, reference):
    class InterruptAtBatchStart:
        def dlfree_train_batch_start(self, batch_index):
            if batch_index == 5:
                raise KeyboardInterrupt

    trainer, data = build(tmp_path, callbacks=[InterruptAtBatchStart()])
    with pytest.warns(ResumeWarning, match="no checkpoint was written .* resuming starts from "
                                           "checkpoint-000000002"):
        trainer.fit(data, validation())
    assert trainer.interrupted
    _resume_and_compare(tmp_path, reference)


def test_plain_iterable_data_resumes_by_skipping_batches(tmp_path):
    rng = np.random.default_rng(3)
    x = dl.tensor(rng.normal(size=(12, 5)).astype("float32"))
    y = dl.tensor(rng.integers(0, 3, 12))
    batches = [(x[i:i + 3], y[i:i + 3]) for i in range(0, 12, 3)]
    trainer, _ = build(data=batches, max_epochs=2)
    trainer.fit(batches)
    want = weights(trainer)
    interrupted, _ = build(tmp_path, data=batches, max_epochs=2,
                           callbacks=[AtBatch(6, _raise_keyboard_interrupt)])
    interrupted.fit(batches)
    resumed, _ = build(tmp_path, data=batches, max_epochs=2, init_seed=5)
    resumed.fit(batches)
    assert all(np.array_equal(weights(resumed)[k], v) for k, v in want.items())


def test_every_checkpoint_refused_is_an_error(tmp_path):
    _interrupt(tmp_path, 10)
    for path in checkpoint_paths(tmp_path):
        _truncate(path)
    trainer, data = build(tmp_path)
    with pytest.warns(ResumeWarning), \
            pytest.raises(dl.CheckpointError, match="no usable training checkpoint"):
        trainer.fit(data)


def test_checkpoint_of_another_model_is_refused_before_anything_is_restored(tmp_path):
    _interrupt(tmp_path, 10)
    _, data = build()
    model = dl.nn.Sequential(dl.nn.Linear(5, 3))
    before = model.state_dict()["0.weight"].numpy().copy()
    trainer = dl.train.Trainer(model, dl.optim.SGD(model.parameters(), lr=0.1),
                               dl.nn.CrossEntropyLoss(), max_epochs=1, checkpoint_dir=tmp_path)
    with pytest.warns(ResumeWarning, match="refusing"), \
            pytest.raises(dl.CheckpointError, match=r"checkpoint-\d+\.safetensors: the model "
                                                    r"weights do not fit.*unexpected keys: "
                                                    r"3.weight, 3.bias"):
        trainer.fit(data)
    assert np.array_equal(model.state_dict()["0.weight"].numpy(), before)


def test_foreign_file_is_refused(tmp_path):
    dl.save({"w": dl.ones(2)}, tmp_path / "checkpoint-000000001.safetensors")
    with pytest.raises(dl.CheckpointError, match="not a dl.free training checkpoint"):
        read_checkpoint(tmp_path / "checkpoint-000000001.safetensors")


def test_state_round_trips_through_a_checkpoint_file(tmp_path):
    value = {"ints": {0: dl.arange(3), 5: (1, 2.5, None)}, "nested": [np.float32(1.5), "s"],
             "inf": float("inf"), "array": np.eye(2), "$odd": True}
    tensors: dict = {}
    packed = pack(value, "x", tensors)
    write_checkpoint(tmp_path / "c.safetensors", {"value": packed}, tensors)
    state, loaded = read_checkpoint(tmp_path / "c.safetensors")
    back = unpack(state["value"], loaded)
    assert back["ints"][0].tolist() == [0, 1, 2] and back["ints"][5] == (1, 2.5, None)
    assert back["nested"] == [1.5, "s"] and back["inf"] == float("inf") and back["$odd"]
    assert np.array_equal(back["array"], np.eye(2))
    with pytest.raises(dl.CheckpointError, match=r"cannot write x/bad .* a set"):
        pack({"bad": {1, 2}}, "x", {})


def test_interrupted_at_the_last_step_resumes_into_its_epoch_end(tmp_path):
    limits = {"max_epochs": None, "max_steps": 5}  # step 5 ends with batch 9, mid-epoch 1
    whole, data = build(**limits)
    whole.fit(data, validation())
    assert whole.history["val_loss"].steps == [4, 5]
    interrupted, data = build(tmp_path, callbacks=[AtBatch(9, _raise_keyboard_interrupt)],
                              **limits)
    interrupted.fit(data, validation())
    assert interrupted.interrupted and interrupted.state.global_step == 5
    _resume_and_compare(tmp_path, (weights(whole), whole.history.state_dict()), **limits)
