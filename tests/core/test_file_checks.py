"""What every reader checks (docs/files.md): regular files only, JSON within limits, the
architecture schema before anything is built, weights of the right dtype, the integrity
digest, and the cleanup of temporary files that killed writers left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import dlfree as dl
from dlfree import nn
from dlfree.errors import MissingPluginError
from dlfree.io import atomic
from dlfree.io.integrity import DIGEST_KEY
from dlfree.io.limits import check_file, parse_json
from dlfree.io.schema import check_architecture

import numpy as np
import pytest
import safetensors.numpy
from hypothesis import given, settings
from hypothesis import strategies as st

from support.fuzz import read_raw, reseal


def _model():
    dl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.safetensors"
    dl.save(_model(), path)
    return path


def _with_architecture(path, architecture) -> None:
    tensors, metadata = read_raw(path)
    text = architecture if isinstance(architecture, str) else json.dumps(architecture)
    reseal(path, tensors, {**metadata, "architecture": text})


# ------------------------------------------------------------------ paths
def test_a_path_that_is_not_a_regular_file_is_refused_by_name(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    for path, what in ((tmp_path, "is a folder"), (fifo, "is a FIFO"),
                       ("/dev/null", "is a device"), (tmp_path / "gone", "no such file")):
        with pytest.raises(dl.CheckpointError, match=rf"{path}.*{what}|{path}: {what}"):
            dl.load(path)


def test_a_symlink_out_of_the_folder_is_refused(tmp_path, saved):
    inside = tmp_path / "model"
    inside.mkdir()
    (inside / "link.safetensors").symlink_to(saved)
    assert check_file(inside / "link.safetensors") == inside / "link.safetensors"
    with pytest.raises(dl.CheckpointError, match="leads out of the model folder"):
        check_file(inside / "link.safetensors", inside=inside)
    with pytest.raises(dl.CheckpointError, match="leads out of the model folder"):
        check_file(inside / ".." / "m.safetensors", inside=inside)


# ------------------------------------------------------------------ JSON limits
def test_json_is_parsed_within_limits():
    with pytest.raises(dl.CheckpointError, match="nested 100000 deep exceeds the limit of 64"):
        parse_json("[" * 100_000 + "]" * 100_000, "x")
    with pytest.raises(dl.CheckpointError, match="11 bytes of JSON exceed the limit of 10"):
        parse_json('"123456789"', "x", max_bytes=10)
    with pytest.raises(dl.CheckpointError, match="4 JSON entries exceed the limit of 3"):
        parse_json("[1, 2, 3, 4]", "x", max_entries=3)
    with pytest.raises(dl.CheckpointError, match="x is unreadable .* the key 'a' appears twice"):
        parse_json('{"a": 1, "a": 2}', "x")
    assert parse_json('{"s": "[[[[{{{{", "n": [1, [2]]}', "x") == {"s": "[[[[{{{{",
                                                                    "n": [1, [2]]}


def test_a_nesting_bomb_in_a_model_file_is_refused_by_the_limit(saved):
    _with_architecture(saved, "[" * 200_000 + "]" * 200_000)
    with pytest.raises(dl.CheckpointError, match=r"m.safetensors: the architecture: JSON "
                                                 r"nested 200000 deep"):
        dl.load(saved)


# ------------------------------------------------------------------ schema, sizes, dtypes
def test_an_architecture_naming_a_function_is_refused_as_a_missing_layer(saved):
    _with_architecture(saved, {"$module": "os.system", "config": {"command": "touch x"}})
    with pytest.raises(MissingPluginError, match="needs the layer 'os.system'") as caught:
        dl.load(saved)
    assert isinstance(caught.value, dl.CheckpointError) and \
        isinstance(caught.value, dl.PluginError)
    assert "m.safetensors" in str(caught.value)


class _NotAModule:
    def __init__(self, size=1):
        self.size = size


def test_an_architecture_whose_root_is_not_a_module_is_refused(saved):
    plugin = type("Plugin", (), {"dlfree_register_layers": staticmethod(dl.hookimpl(
        lambda register: register(_NotAModule)))})
    name = dl.plugins.register(plugin)
    try:
        _with_architecture(saved, {"$module": "_NotAModule", "config": {"size": 2}})
        with pytest.raises(dl.CheckpointError, match="builds a _NotAModule, which is not a "
                                                     "module"):
            dl.load(saved)
    finally:
        dl.plugins.unregister(name)


@pytest.mark.parametrize("edit, match", [
    (lambda a: a["config"]["args"][0]["config"].update(in_features=10**8),
     r"invalid at the model.args\[0\].in_features: 100000000 is larger than the file.s "
     r"weights allow \(at most 65,536, 26 weight elements\)"),
    (lambda a: a["config"]["args"][0]["config"].update(in_features={"$pickle": "x"}),
     "unknown tag '\\$pickle'"),
    (lambda a: a["config"]["args"][0]["config"].update(run="os.system"),
     "the layer 'Linear' takes no argument 'run'"),
    (lambda a: a.update(code=1), "unknown entries 'code'"),
    (lambda a: a["config"]["args"][0]["config"].update(
        bias={"$tensor": {"shape": [2**20, 2**20], "dtype": "float32"}}),
     "tensors of 1,099,511,627,776 elements, more than the file's 26 weights"),
    (lambda a: a["config"]["args"][0]["config"].update(dtype={"$dtype": "float1024"}),
     "'float1024' is not a dtype"),
    (lambda a: a["config"]["args"][0]["config"].update(in_features={"a": 1}),
     "a plain object"),
])
def test_the_architecture_is_checked_before_anything_is_built(saved, edit, match):
    architecture = json.loads(dl.io.read_metadata(saved)["architecture"])
    edit(architecture)
    _with_architecture(saved, architecture)
    with pytest.raises(dl.CheckpointError, match=match):
        dl.load(saved)


def test_weights_of_another_dtype_are_refused(saved):
    tensors, metadata = read_raw(saved)
    reseal(saved, {**tensors, "0.weight": tensors["0.weight"].astype("float64")}, metadata)
    with pytest.raises(dl.CheckpointError, match=r"0.weight is float64 \(4, 3\) in the file, "
                                                 r"float32 \(4, 3\) here"):
        dl.load(saved)


# ------------------------------------------------------------------ the digest
def test_a_flipped_weight_byte_is_refused_unless_verification_is_off(saved):
    want = {k: v.numpy() for k, v in _model().state_dict().items()}
    data = bytearray(saved.read_bytes())
    data[-1] ^= 0x10  # the last byte of the last weight: the file still parses
    saved.write_bytes(bytes(data))
    with pytest.raises(dl.CheckpointError, match="data does not match its digest"):
        dl.load(saved)
    loaded = dl.load(saved, verify=False)
    got = {k: v.numpy() for k, v in loaded.state_dict().items()}
    assert sum(not np.array_equal(got[k], want[k]) for k in want) == 1


def test_files_without_a_digest_load_and_a_damaged_digest_entry_is_refused(tmp_path, saved):
    tensors, metadata = read_raw(saved)
    assert len(metadata[DIGEST_KEY]) == 64
    foreign = tmp_path / "foreign.safetensors"
    digestless = {k: v for k, v in metadata.items() if k != DIGEST_KEY}
    foreign.write_bytes(safetensors.numpy.save(tensors, metadata=digestless))
    loaded = dl.load(foreign)
    assert np.array_equal(loaded.state_dict()["0.weight"].numpy(), tensors["0.weight"])
    damaged = {**digestless, "dlfree_sha257": metadata[DIGEST_KEY]}
    foreign.write_bytes(safetensors.numpy.save(tensors, metadata=damaged))
    with pytest.raises(dl.CheckpointError, match="'dlfree_sha257' is the digest's, damaged"):
        dl.io.load_tensors(foreign)


# ------------------------------------------------------------------ temporary files
def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    target = atomic.re.compile(r"^c-\d+\.bin$")
    (tmp_path / "c-1.bin").write_bytes(b"done")
    old_live = tmp_path / f".c-0.bin.{os.getpid()}.abc.tmp"
    old_live.write_bytes(b"x")
    os.utime(old_live, (time.time() - 100, time.time() - 100))
    of_dead = tmp_path / f".c-2.bin.{dead_pid}.def.tmp"
    fresh_live = tmp_path / f".c-2.bin.{os.getpid()}.ghi.tmp"
    other = tmp_path / f".notes.txt.{dead_pid}.jkl.tmp"
    for path in (of_dead, fresh_live, other):
        path.write_bytes(b"x")
    removed = atomic.remove_stale_temporaries(tmp_path, target)
    assert sorted(removed) == sorted([old_live, of_dead])
    assert fresh_live.exists() and other.exists() and (tmp_path / "c-1.bin").exists()


# ------------------------------------------------------------------ properties
_leaf = st.none() | st.booleans() | st.integers(-2**70, 2**70) | \
    st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
_json = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(["$module", "$tensor", "$dtype", "$tuple", "$float", "$dict", "$device",
                     "config", "from", "shape", "dtype", "parameter", "x"]), inner,
    max_size=4), max_leaves=30)


@settings(max_examples=150, deadline=None)
@given(_json, st.integers(0, 10**6))
def test_the_architecture_schema_accepts_or_refuses_with_checkpoint_error(data, elements):
    try:
        check_architecture(data, "f.safetensors", elements)
    except dl.CheckpointError as e:
        assert str(e).startswith("f.safetensors: the architecture is invalid at ")


@settings(max_examples=40, deadline=None)
@given(in_features=st.integers(1, 6), out_features=st.integers(1, 6), bias=st.booleans(),
       extra=st.dictionaries(st.text(max_size=5), _leaf, max_size=2))
def test_every_saved_architecture_passes_and_edits_are_refused(tmp_path_factory, in_features,
                                                                out_features, bias, extra):
    path = tmp_path_factory.mktemp("p") / "m.safetensors"
    dl.save(nn.Sequential(nn.Linear(in_features, out_features, bias=bias)), path)
    architecture = json.loads(dl.io.read_metadata(path)["architecture"])
    check_architecture(architecture, str(path), in_features * out_features + out_features)
    architecture["config"]["args"][0]["config"].update(extra)
    _with_architecture(path, architecture)
    try:
        model = dl.load(path)
    except dl.CheckpointError as e:
        assert "m.safetensors" in str(e)
    else:
        assert not extra  # any key a layer does not take is refused
        assert model[0].weight.shape == (out_features, in_features)
