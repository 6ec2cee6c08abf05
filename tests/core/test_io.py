"""Safetensors files and atomic writes: round trips, and bad files refused cleanly."""

from __future__ import annotations

import os

import dlfree as dl
from dlfree.io import atomic_write, load_tensors, read_metadata, save_tensors

import numpy as np
import pytest


def test_tensors_round_trip_with_metadata(tmp_path):
    tensors = {"w": dl.randn(3, 4), "steps": dl.arange(5), "half": dl.ones(2, dtype=dl.float16),
               "flag": dl.tensor([True, False]), "scalar": dl.tensor(2.5),
               "strided": dl.randn(4, 6)[:, ::2]}
    path = tmp_path / "t.safetensors"
    save_tensors(tensors, path, {"note": "hello"})
    loaded, metadata = load_tensors(path)
    assert metadata == {"note": "hello"} and read_metadata(path) == {"note": "hello"}
    for name, value in tensors.items():
        assert loaded[name].dtype == value.dtype and loaded[name].shape == value.shape
        np.testing.assert_array_equal(loaded[name].numpy(), value.numpy())


def test_dict_of_tensors_through_dl_save_and_load(tmp_path):
    state = {"a": dl.randn(2, 2), "b": dl.zeros(3, dtype=dl.int32)}
    dl.save(state, tmp_path / "s.safetensors")
    loaded = dl.load(tmp_path / "s.safetensors")
    assert list(loaded) == ["a", "b"]
    np.testing.assert_array_equal(loaded["a"].numpy(), state["a"].numpy())
    with pytest.raises(TypeError, match="does not store .* supported: dl.Tensor"):
        dl.save({1, 2}, tmp_path / "x.safetensors")


def test_the_file_holds_no_pickle(tmp_path):
    path = tmp_path / "t.safetensors"
    save_tensors({"w": dl.ones(2)}, path)
    header_length = int.from_bytes(path.read_bytes()[:8], "little")
    assert path.read_bytes()[8:9] == b"{" and header_length < path.stat().st_size
    assert b"\x80\x04" not in path.read_bytes()[:8 + header_length]  # no pickle protocol mark


@pytest.mark.parametrize("damage", ["truncated_header", "truncated_data", "garbage", "empty"])
def test_bad_files_raise_checkpoint_error_naming_the_file(tmp_path, damage):
    path = tmp_path / "t.safetensors"
    save_tensors({"w": dl.randn(100)}, path)
    data = path.read_bytes()
    data = {"truncated_header": data[:20], "truncated_data": data[:-40],
            "garbage": b"\x07" * 64, "empty": b""}[damage]
    path.write_bytes(data)
    with pytest.raises(dl.CheckpointError, match="t.safetensors"):
        load_tensors(path)


def test_atomic_write_replaces_whole_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    atomic_write(path, b"old")
    atomic_write(path, b"new contents")
    assert path.read_bytes() == b"new contents"

    def failing_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, b"half")
    assert path.read_bytes() == b"new contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_atomic_write_names_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        atomic_write(tmp_path / "nope" / "f.bin", b"x")
    with pytest.raises(IsADirectoryError, match="folder"):
        atomic_write(tmp_path, b"x")


def test_atomic_write_gives_ordinary_file_modes(tmp_path):
    fresh = atomic_write(tmp_path / "fresh.bin", b"x")
    umask = os.umask(0o022)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask
    kept = tmp_path / "kept.bin"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    atomic_write(kept, b"new")
    assert kept.stat().st_mode & 0o777 == 0o640
