"""Build real wheels and install subsets into fresh virtual environments.

(a) the core alone, (b) the core and the third-party fixture plugin, (c) a plugin that
breaks on import beside them, (d) the core and dlfree-optim without dlfree-nn, (e) every
first-party distribution (no PyTorch anywhere) plus a third-party layer package whose
model round-trips through a model file between two processes, (f) the core with dlfree-nn,
dlfree-optim and dlfree-train, the Trainer without metrics or HuggingFace. Marked slow:
each environment installs from the index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]


def _run(cmd, env=None, check=True):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} failed ({result.returncode}):\n{result.stdout}\n"
                             f"{result.stderr}")
    return result


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    projects = {"dlfree": ROOT / "packages" / "core",
                "dlfree_nn": ROOT / "packages" / "nn",
                "dlfree_optim": ROOT / "packages" / "optim",
                "dlfree_train": ROOT / "packages" / "train",
                "dlfree_metrics": ROOT / "packages" / "metrics",
                "dlfree_hf": ROOT / "packages" / "hf",
                "dlfree_fixture_plugin": FIXTURES / "dlfree-fixture-plugin",
                "dlfree_fixture_layers": FIXTURES / "dlfree-fixture-layers",
                "dlfree_broken_plugin": FIXTURES / "dlfree-broken-plugin"}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(out), *map(str, projects.values())])
    return {name: next(out.glob(f"{name}-*.whl")) for name in projects}


class Venv:
    """A fresh virtual environment with its own interpreter."""

    def __init__(self, path: Path):
        _run([sys.executable, "-m", "venv", str(path)])
        self.python = str(path / "bin" / "python")
        self.bin = path / "bin"

    def install(self, *wheels: Path) -> None:
        _run([self.python, "-m", "pip", "install", "-q", *map(str, wheels)])

    def run(self, code: str, check=True, **env):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("DLFREE_")}
        full_env.update(env)
        return _run([self.python, "-c", textwrap.dedent(code)], env=full_env, check=check)


@pytest.fixture
def venv(tmp_path, wheels) -> Venv:
    """A fresh environment with only the core installed."""
    env = Venv(tmp_path / "env")
    env.install(wheels["dlfree"])
    return env


def test_a_core_alone(venv):
    out = venv.run("""
        import sys, dlfree as dl
        x = dl.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        print(x.grad.tolist())
        try:
            dl.nn
        except ModuleNotFoundError as e:
            print(e)
        print("torch" in sys.modules)
        try:
            from dlfree import train
        except ModuleNotFoundError as e:
            print(e)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("attrs", "attr", "tqdm")))
    """).stdout.splitlines()
    assert out[0] == "[2.0, 4.0]"
    assert "dlfree.nn is provided by the distribution 'dlfree-nn'" in out[1]
    assert "pip install dlfree-nn" in out[1]
    assert out[2] == "False"
    assert "dlfree.train is provided by the distribution 'dlfree-train'" in out[3]
    assert "pip install dlfree-train" in out[3]
    assert out[4] == "[]"
    listed = json.loads(_run([str(venv.bin / "dlfree"), "plugins", "--json"]).stdout)
    assert [row["name"] for row in listed] == ["dlfree"]


def test_b_core_and_the_fixture_plugin(venv, wheels):
    venv.install(wheels["dlfree_fixture_plugin"])
    out = venv.run("""
        import dlfree as dl
        print(sorted(dl.registry.layers.names()), dl.registry.optimizers.names(),
              dl.registry.initializers.names())
        print(dl.registry.layers.provider("Scale")["distribution"],
              dl.registry.layers.provider("Scale")["version"])
        layer = dl.registry.layers.create("Scale", init=1.0)
        opt = dl.registry.optimizers.get("SignSGD")(layer.parameters(), lr=0.25)
        x = dl.tensor([1.0, 2.0])
        for _ in range(4):   # pull the scale towards 2
            layer.weight.grad = None
            ((layer(x) - 2 * x) ** 2).sum().backward()
            opt.step()
        print(layer.weight.item())
        w = dl.registry.initializers.get("constant_half_")(dl.zeros(3))
        print(w.tolist())
    """).stdout.splitlines()
    assert out[0] == "['Scale'] ['SignSGD'] ['constant_half_']"
    assert out[1] == "dlfree-fixture-plugin 1.2.3"
    assert float(out[2]) == 2.0
    assert out[3] == "[0.5, 0.5, 0.5]"
    listed = {r["name"]: r for r in json.loads(
        _run([str(venv.bin / "dlfree"), "plugins", "--json"]).stdout)}
    fixture = listed["fixture"]
    assert fixture["distribution"] == "dlfree-fixture-plugin" and fixture["version"] == "1.2.3"
    assert fixture["registers"] == {"initializers": ["constant_half_"], "layers": ["Scale"],
                                    "optimizers": ["SignSGD"]}
    assert "dlfree_register_commands" in fixture["hooks"]
    hello = _run([str(venv.bin / "dlfree"), "fixture-hello"]).stdout.strip()
    assert hello == "hello from dlfree-fixture-plugin"


def test_c_a_broken_plugin_is_reported_and_skipped(venv, wheels):
    venv.install(wheels["dlfree_fixture_plugin"], wheels["dlfree_broken_plugin"])
    code = """
        import dlfree as dl
        print(dl.registry.layers.names())
    """
    result = venv.run(code)
    assert result.stdout.strip() == "['Scale']"
    assert "PluginWarning" in result.stderr
    assert "'dlfree-broken-plugin' failed to load" in result.stderr
    assert "needs a module that is not installed" in result.stderr
    strict = venv.run(code, check=False, DLFREE_STRICT_PLUGINS="1")
    assert strict.returncode != 0
    assert "PluginError" in strict.stderr and "dlfree-broken-plugin" in strict.stderr
    only = venv.run(code, DLFREE_PLUGINS="dlfree-fixture-plugin")
    assert only.stdout.strip() == "['Scale']" and "PluginWarning" not in only.stderr


def test_d_core_and_optim_train_raw_parameters(venv, wheels):
    venv.install(wheels["dlfree_optim"])
    out = venv.run("""
        import dlfree as dl
        from dlfree import optim
        dl.manual_seed(0)
        x = dl.randn(64, 3)
        y = x @ dl.tensor([[1.0], [-2.0], [0.5]])
        w = dl.Parameter(dl.zeros(3, 1))
        opt = optim.AdamW([w], lr=0.1, weight_decay=0.0)
        losses = []
        for _ in range(100):
            opt.zero_grad()
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        print(losses[0] > 1.0, losses[-1] < 1e-3)
        print(dl.registry.optimizers.provider("LAMB")["distribution"])
        try:
            dl.nn
        except ModuleNotFoundError as e:
            print("no nn:", "pip install dlfree-nn" in str(e))
    """).stdout.splitlines()
    assert out == ["True True", "dlfree-optim", "no nn: True"]


def test_e_everything_and_a_third_party_layer_in_a_model_file(tmp_path, venv, wheels):
    venv.install(wheels["dlfree_nn"], wheels["dlfree_optim"], wheels["dlfree_train"],
                 wheels["dlfree_metrics"], wheels["dlfree_hf"], wheels["dlfree_fixture_layers"])
    path = tmp_path / "model.safetensors"
    saved = venv.run(f"""
        import dlfree as dl
        from dlfree import nn
        from dlfree_fixture_layers import GatedLinear
        dl.manual_seed(0)
        model = nn.Sequential(GatedLinear(3, 4, gate_bias=0.5), nn.ReLU(), nn.Linear(4, 2))
        dl.save(model, {str(path)!r})
        print(model(dl.ones(1, 3)).detach().tolist())
    """).stdout.strip()
    loaded = venv.run(f"""
        import sys
        import dlfree as dl
        model = dl.load({str(path)!r})
        print(model(dl.ones(1, 3)).detach().tolist())
        print(type(model[0]).__module__, float(model[0].gate.bias[0]))
        print(sorted(m for m in sys.modules if m.startswith("dlfree_")))
    """).stdout.splitlines()
    assert loaded[0] == saved
    assert loaded[1] == "dlfree_fixture_layers 0.5"
    assert loaded[2] == "['dlfree_fixture_layers']"  # found through its entry point
    listed = {r["distribution"] for r in json.loads(
        _run([str(venv.bin / "dlfree"), "plugins", "--json"]).stdout)}
    assert {"dlfree", "dlfree-nn", "dlfree-optim", "dlfree-train", "dlfree-metrics",
            "dlfree-hf", "dlfree-fixture-layers"} <= listed
    hf_help = _run([str(venv.bin / "dlfree"), "hf", "--help"]).stdout
    assert all(command in hf_help for command in ("info", "embed", "generate"))
    no_torch = venv.run("""
        import sys
        import dlfree as dl
        from dlfree import hf
        print(sorted(dl.registry.architectures.names()), "torch" in sys.modules)
    """).stdout.strip()
    assert no_torch == ("['albert', 'bert', 'deberta-v2', 'distilbert', 'gpt2', 'llama', "
                        "'mistral', 'qwen2', 'roberta', 't5', 'vit', 'xlm-roberta'] "
                        "False")
    missing = venv.run(f"""
        import dlfree as dl
        try:
            dl.load({str(path)!r})
        except dl.PluginError as e:
            print(e)
    """, DLFREE_PLUGINS="dlfree-nn").stdout
    assert "'GatedLinear'" in missing and "pip install dlfree-fixture-layers" in missing
    # attrs and tqdm are installed here (dlfree-train needs them), yet the core loads neither,
    # nor any training code
    core_only = venv.run("""
        import importlib.util, sys
        import dlfree
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("attrs", "attr", "tqdm")
                     or m.startswith("dlfree.train")),
              all(importlib.util.find_spec(m) is not None for m in ("attrs", "tqdm")))
    """).stdout.strip()
    assert core_only == "[] True"


def test_f_the_trainer_with_nn_and_optim(venv, wheels):
    venv.install(wheels["dlfree_nn"], wheels["dlfree_optim"], wheels["dlfree_train"])
    out = venv.run("""
        import sys
        import dlfree as dl
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("attrs", "attr", "tqdm")
                     or m.startswith("dlfree.train")))
        from dlfree import nn, optim
        dl.manual_seed(0)
        x = dl.randn(32, 3)
        batches = [(x[i:i + 8], x[i:i + 8] @ dl.tensor([[1.0], [-2.0], [0.5]]))
                   for i in range(0, 32, 8)]
        model = nn.Linear(3, 1)
        stopper = dl.registry.callbacks.create("early_stopping", monitor="loss", patience=50)
        trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.MSELoss(),
                                   max_epochs=30, grad_clip_norm=10.0, callbacks=[stopper])
        losses = trainer.fit(batches)["loss"].values
        print(len(losses), losses[0] > 10 * losses[-1])
        print(type(stopper).__name__, dl.registry.callbacks.provider("early_stopping")
              ["distribution"])
        dl.plugins.manager().check_pending()
        try:
            dl.metrics
        except ModuleNotFoundError as e:
            print("no metrics:", "pip install dlfree-metrics" in str(e))
    """).stdout.splitlines()
    assert out == ["[]", "30 True", "EarlyStopping dlfree-train", "no metrics: True"]
    listed = {r["name"]: r for r in json.loads(
        _run([str(venv.bin / "dlfree"), "plugins", "--json"]).stdout)}
    train = listed["train"]
    assert train["distribution"] == "dlfree-train"
    assert "dlfree_add_hookspecs" in train["hooks"]
    assert "model_checkpoint" in train["registers"]["callbacks"]


def test_the_train_wheel_ships_dlfree_train_only(wheels):
    import zipfile

    with zipfile.ZipFile(wheels["dlfree_train"]) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert all(n.startswith(("dlfree/train/", "dlfree_train-")) for n in names), names
    assert "dlfree/train/plugin.py" in names and "dlfree/train/hookspecs.py" in names
    assert "dlfree/train/dashboard/page.html" in names  # the dashboard's page, a data file
    requires = {line.split(":", 1)[1].strip().split(">")[0] for line in
                metadata.decode().splitlines() if line.startswith("Requires-Dist:")}
    assert requires == {"dlfree", "dlfree-optim", "attrs", "tqdm", "psutil"}


def test_every_wheel_is_marked_typed_and_the_core_ships_the_tensor_stub(wheels):
    import zipfile

    marker = {"dlfree": "dlfree/py.typed", "dlfree_nn": "dlfree/nn/py.typed",
              "dlfree_optim": "dlfree/optim/py.typed", "dlfree_metrics": "dlfree/metrics/py.typed",
              "dlfree_hf": "dlfree/hf/py.typed", "dlfree_train": "dlfree/train/py.typed"}
    missing = [name for name, path in marker.items()
               if path not in zipfile.ZipFile(wheels[name]).namelist()]
    assert missing == []
    assert "dlfree/tensor.pyi" in zipfile.ZipFile(wheels["dlfree"]).namelist()


def test_cuda_extras_pull_the_matching_cupy(wheels):
    import zipfile

    with zipfile.ZipFile(wheels["dlfree"]) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = wheel.read(name).decode()
    requires = [line.replace('"', "'") for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")]
    assert any("cupy-cuda12x" in r and "extra == 'cuda12'" in r for r in requires)
    assert any("cupy-cuda13x" in r and "extra == 'cuda13'" in r for r in requires)
    assert not any("cupy" in r and "extra ==" not in r for r in requires)  # CuPy stays optional
    assert "Provides-Extra: cuda12" in metadata and "Provides-Extra: cuda13" in metadata
    # the training loop's dependencies are dlfree-train's now
    assert not any(r.split(":", 1)[1].strip().startswith(("attrs", "tqdm")) for r in requires)
