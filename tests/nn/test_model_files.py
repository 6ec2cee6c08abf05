"""`dl.save` / `dl.load` of whole models: weights plus architecture, rebuilt through the
registries, no pickle; bad files and missing plugins give clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import dlfree as dl
import dlfree.functional as F
from dlfree import nn

import numpy as np
import pytest


class Gate(nn.Module):
    """A user-defined layer with a keyword-only argument, a dtype, a tuple and a buffer."""

    def __init__(self, size: int, *, shape: tuple = (1, 2), dtype=dl.float32,
                 act: str = "relu"):
        super().__init__()
        self.weight = dl.Parameter(dl.randn(size, dtype=dtype))
        self.register_buffer("seen", dl.zeros((), dtype=dtype))
        self.shape, self.act = shape, act

    def forward(self, x):
        return getattr(F, self.act)(x * self.weight)


class Plugin:
    @dl.hookimpl
    def dlfree_register_layers(self, register):
        register(Gate)


@pytest.fixture
def gate_registered():
    name = dl.plugins.register(Plugin(), "test-gate-plugin")
    yield
    dl.plugins.unregister(name)


def _same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert sa[k].dtype == sb[k].dtype
        np.testing.assert_array_equal(sa[k].numpy(), sb[k].numpy())


def test_user_layer_round_trips(tmp_path, gate_registered):
    model = nn.Sequential(Gate(3, shape=(2, 2), dtype=dl.float64, act="tanh"),
                          nn.ModuleList([Gate(3), nn.Identity()]))
    model[1].append(Gate(4))
    model.eval()
    path = tmp_path / "model.safetensors"
    dl.save(model, path)
    loaded = dl.load(path)
    assert type(loaded) is nn.Sequential and not loaded.training
    assert loaded[0].shape == (2, 2) and loaded[0].act == "tanh"
    assert loaded[0].weight.dtype == dl.float64 and len(loaded[1]) == 3
    _same_state(model, loaded)
    x = dl.randn(3, dtype=dl.float64)
    np.testing.assert_array_equal(loaded[0](x).detach().numpy(), model[0](x).detach().numpy())


def test_architecture_is_json_in_the_metadata(tmp_path, gate_registered):
    dl.save(Gate(2), tmp_path / "g.safetensors")
    meta = dl.io.read_metadata(tmp_path / "g.safetensors")
    arch = json.loads(meta["architecture"])
    assert meta["format"] == "dlfree-model"
    assert arch["$module"] == "Gate" and arch["config"]["size"] == 2
    assert arch["config"]["shape"] == {"$tuple": [1, 2]}


def test_unregistered_class_cannot_be_saved(tmp_path):
    with pytest.raises(dl.CheckpointError, match=r"Gate.*not a registered layer"):
        dl.save(Gate(2), tmp_path / "g.safetensors")
    assert not (tmp_path / "g.safetensors").exists()


def test_unsaveable_argument_is_named(tmp_path, gate_registered):
    gate = Gate(2, act="relu")
    gate._init_arguments["act"] = F.relu
    with pytest.raises(dl.CheckpointError, match=r"Gate\.act.*function"):
        dl.save(gate, tmp_path / "g.safetensors")


def test_missing_plugin_names_the_layer_and_where_it_came_from(tmp_path, gate_registered):
    path = tmp_path / "g.safetensors"
    dl.save(nn.Sequential(Gate(2)), path)
    dl.plugins.unregister("test-gate-plugin")
    try:
        with pytest.raises(dl.PluginError, match=r"layer 'Gate'.*registered by <.*test_model"):
            dl.load(path)
    finally:
        dl.plugins.register(Plugin(), "test-gate-plugin")


def test_missing_first_party_distribution_is_named(tmp_path, gate_registered):
    path = tmp_path / "g.safetensors"
    dl.save(Gate(2), path)
    meta = dl.io.read_metadata(path)
    arch = json.loads(meta["architecture"])
    arch.update({"$module": "Wavelet", "from": "dlfree-wavelets"})
    weights, _ = dl.io.load_tensors(path)
    dl.io.save_tensors(weights, path, {**meta, "architecture": json.dumps(arch)})
    with pytest.raises(dl.PluginError, match=r"'Wavelet'.*pip install dlfree-wavelets"):
        dl.load(path)


@pytest.mark.parametrize("damage", ["shape", "missing", "extra", "truncated", "architecture"])
def test_bad_model_files_raise_checkpoint_error(tmp_path, gate_registered, damage):
    path = tmp_path / "g.safetensors"
    dl.save(Gate(3), path)
    weights, meta = dl.io.load_tensors(path)
    if damage == "shape":
        weights["weight"] = dl.zeros(4)
    elif damage == "missing":
        del weights["seen"]
    elif damage == "extra":
        weights["bias"] = dl.zeros(3)
    elif damage == "architecture":
        meta["architecture"] = "{not json"
    dl.io.save_tensors(weights, path, meta)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-5])
    expected = {"shape": r"weight.*\(4,\).*\(3,\)", "missing": "missing keys: seen",
                "extra": "unexpected keys: bias", "truncated": "corrupt or truncated",
                "architecture": "architecture .* unreadable"}[damage]
    with pytest.raises(dl.CheckpointError, match=expected):
        dl.load(path)


def test_a_fresh_process_importing_only_dlfree_loads_a_model(tmp_path):
    model = nn.Sequential(nn.ParameterList([dl.randn(2, 3)]), nn.Identity())
    path = tmp_path / "m.safetensors"
    dl.save(model, path)
    code = (f"import sys, dlfree as dl; m = dl.load({str(path)!r}); "
            "print(type(m).__module__, type(m).__name__, list(m.state_dict()), "
            "'torch' in sys.modules, 'pickle' in sys.modules and sys.modules['pickle'].__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:2] == ["dlfree.nn.containers", "Sequential"]
    assert out[2] == "['0.0']" and out[3] == "False"
