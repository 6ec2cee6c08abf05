"""Hand-edited training states (resealed, so their digest passes) are refused by the schema,
range and fit checks before the Trainer is touched, and `fit` falls back to the previous
checkpoint; stale temporary files and extra checkpoints are cleaned up."""

from __future__ import annotations

import json
import os

import dlfree as dl
from dlfree.train import ResumeWarning
from dlfree.train.state_file import checkpoint_paths

import numpy as np
import pytest

from support.fuzz import read_raw, reseal
from support.resume_run import AtBatch, build, validation, weights


def _raise_keyboard_interrupt():
    raise KeyboardInterrupt


@pytest.fixture(scope="module")
def reference():
    trainer, data = build()
    trainer.fit(data, validation())
    return weights(trainer)


def _edit_state(path, change=None, tensors_change=None) -> None:
    tensors, metadata = read_raw(path)
    state = json.loads(metadata["state"])
    if change is not None:
        change(state)
    if tensors_change is not None:
        tensors = tensors_change(tensors)
    reseal(path, tensors, {**metadata, "state": json.dumps(state)})


def _moment(tensors: dict) -> str:
    return next(k for k, v in tensors.items() if k.startswith("optimizer/") and v.ndim)


EDITS = {
    "negative step": (lambda s: s["trainer"].update(global_step=-4), None,
                      r"trainer.global_step: expected an int >= 0, got -4"),
    "text epoch": (lambda s: s["trainer"].update(epoch="1"), None,
                   r"trainer.epoch: expected an int >= 0, got '1'"),
    "batch past the epoch": (lambda s: s["trainer"].update(batch_index=50), None,
                             r"50 batches done of an epoch of 7"),
    "group size 0": (lambda s: s["progress"].update(group_size=0), None,
                     r"progress.group_size: expected an int >= 1"),
    "unknown entry": (lambda s: s.update(hook="os.system"), None, r"unknown entries 'hook'"),
    "missing rng": (lambda s: s.pop("rng"), None, r"missing rng"),
    "dangling reference": (lambda s: s["grads"].update(x={"$tensor": "nope"}), None,
                           r"refers to the tensor 'nope', which the file does not hold"),
    "int64 moment": (None, lambda t: {**t, _moment(t): t[_moment(t)].astype("int64")},
                     r"a int64 statistic for a float32 parameter"),
    "gradient of the wrong shape": (None, lambda t: {**t, "grad/0.weight": np.zeros(
        (2, 2), "float32")}, r"the gradients do not fit: 0.weight is float32 \(2, 2\) in the "
                             r"file, float32 \(16, 5\) here"),
    "weight of another dtype": (None, lambda t: {**t, "model/3.bias": t["model/3.bias"].astype(
        "float64")}, r"the model weights do not fit: 3.bias is float64"),
    "bad history": (lambda s: s["history"].update(loss={"values": [1.0], "steps": []}), None,
                    r"history.loss: expected equally long lists"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_hand_edited_state_is_refused_for_the_previous_checkpoint(tmp_path, reference,
                                                                    edit):
    change, tensors_change, match = EDITS[edit]
    trainer, data = build(tmp_path, callbacks=[AtBatch(10, _raise_keyboard_interrupt)])
    trainer.fit(data, validation())
    newest, previous = checkpoint_paths(tmp_path)
    if edit == "gradient of the wrong shape":  # (a checkpoint taken between steps has none)
        assert "grad/0.weight" in read_raw(newest)[0]
    _edit_state(newest, change, tensors_change)
    resumed, data = build(tmp_path, init_seed=99)
    with pytest.warns(ResumeWarning, match=rf"refusing training checkpoint .*{newest.name}:"
                                           rf".*{match}"):
        resumed.fit(data, validation())
    got = weights(resumed)
    assert all(np.array_equal(got[k], v) for k, v in reference.items())


def test_pruning_keeps_the_newest_two_after_a_kill_left_more(tmp_path):
    trainer, data = build(tmp_path, max_epochs=1)
    trainer.fit(data)
    first = checkpoint_paths(tmp_path)
    stray = [tmp_path / "checkpoint-000000001.safetensors",
             tmp_path / "checkpoint-000000900.safetensors"]  # older, and a refused newer one
    stray[0].write_bytes(first[0].read_bytes())
    stray[1].write_bytes(b"damaged")
    temporary = tmp_path / ".checkpoint-000000006.safetensors.999999999.x.tmp"
    temporary.write_bytes(b"half")
    again, data = build(tmp_path, max_epochs=2)
    with pytest.warns(ResumeWarning, match="checkpoint-000000900"):
        again.fit(data)
    names = [p.name for p in checkpoint_paths(tmp_path)]
    assert names == [f"checkpoint-{again.state.global_step:09d}.safetensors",
                     f"checkpoint-{again.state.global_step - 2:09d}.safetensors"]
    assert not temporary.exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_read_checkpoint_refuses_a_file_without_a_digest(tmp_path):
    path = tmp_path / "checkpoint-000000001.safetensors"
    import safetensors.numpy

    path.write_bytes(safetensors.numpy.save(
        {"x": np.zeros(2)}, metadata={"format": "dlfree-training-checkpoint",
                                      "format_version": "1", "state": "{}"}))
    with pytest.raises(dl.CheckpointError, match="has no digest"):
        dl.train.read_checkpoint(path)
