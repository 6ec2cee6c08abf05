"""`dl.save`/`dl.load` of nested checkpoint objects (no pickle), streams, `dtype=` and
`rename=`, against what `torch.save`/`torch.load` give back for the same object."""

from __future__ import annotations

import io
import json

import dlfree as dl
from dlfree.io import load_tensors, save_tensors

import numpy as np
import pytest
import torch

from support.optim import torch_state_to_dl
from support.torch_copy import torch_to_dl


def _checkpoint(lib, model, opt, flag=None):
    return {"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 7,
            "best_val_loss": 1.25, "config": {"n_layer": 2, "bias": False, "name": "gpt",
                                              "dropout": None, "betas": (0.9, 0.95)},
            "history": [1.5, float("inf"), lib.tensor(0.5)], "flag": flag}


def _same_tree(ours, theirs, where="root"):
    """The trees match node for node: container types, keys, scalars and tensor values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, dl.Tensor), where
        assert ours.shape == tuple(theirs.shape), where
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=where)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), (where, ours, theirs)
        for key in theirs:
            _same_tree(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (where, ours, theirs)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same_tree(a, b, f"{where}[{i}]")
    else:
        assert type(ours) is type(theirs) and ours == theirs, (where, ours, theirs)


def test_a_checkpoint_dict_round_trips_as_torch_save_does(tmp_path):
    torch.manual_seed(0)
    tm = torch.nn.Linear(3, 2)
    topt = torch.optim.Adam(tm.parameters(), lr=1e-3, betas=(0.9, 0.95))
    tm(torch.randn(4, 3)).sum().backward()
    topt.step()
    dm = dl.nn.Linear(3, 2)
    torch_to_dl(tm, dm)
    dopt = dl.optim.Adam(dm.parameters(), lr=1e-3, betas=(0.9, 0.95))
    dopt.load_state_dict(torch_state_to_dl(topt.state_dict()))

    buffer = io.BytesIO()
    torch.save(_checkpoint(torch, tm, topt, flag=True), buffer)
    buffer.seek(0)
    theirs = torch.load(buffer, weights_only=True)
    dl.save(_checkpoint(dl, dm, dopt, flag=True), tmp_path / "ckpt.pt")
    ours = dl.load(tmp_path / "ckpt.pt")

    _same_tree(ours["model"], theirs["model"])
    _same_tree(ours["config"], theirs["config"])
    _same_tree(ours["history"], theirs["history"])
    for key in ("iter_num", "best_val_loss", "flag"):
        _same_tree(ours[key], theirs[key])
    assert list(ours["optimizer"]["state"]) == list(theirs["optimizer"]["state"]) == [0, 1]
    for index, state in theirs["optimizer"]["state"].items():
        mine = ours["optimizer"]["state"][index]
        _same_tree({k: mine[k] for k in ("exp_avg", "exp_avg_sq")},
                   {k: state[k] for k in ("exp_avg", "exp_avg_sq")})
        assert mine["step"] == state["step"].item()  # dl.free keeps the step an int
    assert ours["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.95)
    dopt.load_state_dict(ours["optimizer"])  # what the loaded state is for


def test_the_structure_is_json_and_the_tensors_safetensors(tmp_path):
    path = tmp_path / "o.safetensors"
    shared = dl.randn(3)
    dl.save({"a": [shared, shared], 3: (None, "x")}, path)
    tensors, metadata = load_tensors(path)
    assert list(tensors) == ["a/0"]  # a tensor reached twice is stored once
    assert json.loads(metadata["structure"]) == {
        "dict": [["a", {"list": [{"tensor": "a/0"}, {"tensor": "a/0"}]}],
                 [3, {"tuple": [None, "x"]}]]}
    loaded = dl.load(path)
    assert loaded["a"][0] is loaded["a"][1] and loaded[3] == (None, "x")


def test_streams_keep_requires_grad_and_scalars(tmp_path):
    w = dl.randn(2, 2, requires_grad=True)
    buffer = io.BytesIO()
    dl.save([w, dl.tensor(3), -2, 0.5, False, "s"], buffer)
    buffer.seek(0)
    loaded = dl.load(buffer)
    assert loaded[0].requires_grad and loaded[1].dtype == dl.int64 and loaded[1].shape == ()
    assert loaded[2:] == [-2, 0.5, False, "s"]
    with open(tmp_path / "f.bin", "wb") as f:
        dl.save({"w": w.detach()}, f)
    with open(tmp_path / "f.bin", "rb") as f:
        np.testing.assert_array_equal(dl.load(f)["w"].numpy(), w.detach().numpy())


@pytest.mark.parametrize("obj, named", [
    ({"opt": {1, 2}}, "the object['opt'] is a builtins.set"),
    ([object()], "the object[0] is a builtins.object"),
    ({"f": np.ones(2)}, "numpy.ndarray"),
    ({frozenset([2]): 0}, "keys must be"),
])
def test_other_objects_are_refused_naming_type_and_what_is_supported(tmp_path, obj, named):
    with pytest.raises(TypeError, match="supported|keys must be") as info:
        dl.save(obj, tmp_path / "x.safetensors")
    assert named in str(info.value)
    assert not (tmp_path / "x.safetensors").exists()


def test_a_cycle_and_a_bad_target_are_refused(tmp_path):
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        dl.save(loop, tmp_path / "x")
    with pytest.raises(TypeError, match="path .* or an open binary file"):
        dl.save({}, 3)
    with pytest.raises(TypeError, match="text mode"), open(tmp_path / "t.txt", "w") as f:
        dl.save({}, f)


@pytest.mark.parametrize("structure", [
    "{not json", json.dumps({"tensor": "missing"}), json.dumps({"set": [1]}),
    json.dumps({"dict": [[{"list": []}, 1]]}), json.dumps({"list": []}),
    json.dumps({"dict": [[1]]}), "[" * 100000 + "]" * 100000,
])
def test_a_damaged_structure_is_a_checkpoint_error(tmp_path, structure):
    path = tmp_path / "bad.safetensors"
    save_tensors({"w": dl.ones(1)}, path,
                 {"format": "dlfree-objects", "format_version": "1", "structure": structure})
    with pytest.raises(dl.CheckpointError, match="bad.safetensors"):
        dl.load(path)


def test_dtype_converts_floating_tensors_on_request(tmp_path):
    dl.save({"w": dl.randn(2), "step": dl.tensor(4)}, tmp_path / "s")
    loaded = dl.load(tmp_path / "s", dtype=dl.float64)
    assert loaded["w"].dtype == dl.float64 and loaded["step"].dtype == dl.int64
    with pytest.raises(dl.DTypeError, match="not a floating dtype"):
        dl.load(tmp_path / "s", dtype=dl.int32)


def test_a_half_model_loads_back_half_and_converts_on_request(tmp_path):
    model = dl.nn.Sequential(dl.nn.Linear(3, 4), dl.nn.BatchNorm1d(4)).half()
    dl.save(model, tmp_path / "m")
    loaded = dl.load(tmp_path / "m")
    assert {str(v.dtype) for v in loaded.state_dict().values()} == {"dlfree.float16",
                                                                    "dlfree.int64"}
    assert dl.load(tmp_path / "m", dtype=dl.float64)[0].weight.dtype == dl.float64


def test_rename_on_dl_load_maps_prefixes_and_reports(tmp_path, caplog):
    dl.save({"module.fc.weight": dl.ones(1), "module.fc2.bias": dl.zeros(1)}, tmp_path / "s")
    with caplog.at_level("INFO", logger="dlfree.io"):
        loaded = dl.load(tmp_path / "s", rename={"module.": "", "module.fc": "head"})
    assert list(loaded) == ["head.weight", "fc2.bias"]
    assert "module.fc.weight -> head.weight" in caplog.text
    with pytest.raises(KeyError, match="match no key"):
        dl.load(tmp_path / "s", rename={"encoder.": ""})
    with pytest.raises(KeyError, match="several keys"):
        dl.load(tmp_path / "s", rename={"module.fc.weight": "w", "module.fc2.bias": "w"})
