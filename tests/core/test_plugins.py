"""The plugin system: lazy discovery, environment switches, registries and their errors,
user-code plugins, every hook, and the `dlfree` command.

Third-party distributions are simulated with a `.dist-info` folder on sys.path, which is
what an installed wheel leaves behind; tests/packaging installs real wheels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dlfree as dl
from dlfree import cli, first_party, hookspecs, plugins
from dlfree.plugins import PluginWarning

import pluggy
import pytest

ROOT = Path(__file__).resolve().parents[2]


class FakeSite:
    """A folder on sys.path where tests 'install' plugin distributions."""

    def __init__(self, root: Path):
        self.root = root
        self.modules: list[str] = []

    def install(self, dist: str, module: str, source: str, version: str = "1.0") -> None:
        (self.root / f"{module}.py").write_text(textwrap.dedent(source))
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[dlfree]\n{module} = {module}\n")
        self.modules.append(module)


@pytest.fixture
def site(tmp_path):
    sys.path.insert(0, str(tmp_path))
    fake = FakeSite(tmp_path)
    yield fake
    sys.path.remove(str(tmp_path))
    for m in fake.modules:
        sys.modules.pop(m, None)
    plugins.reload()


LAYER_PLUGIN = """
    import dlfree as dl

    class Doubler:
        def __init__(self, factor=2):
            self.factor = factor

    @dl.hookimpl
    def dlfree_register_layers(register):
        register(Doubler)
"""


def test_import_loads_no_plugin_and_first_access_does(tmp_path):
    site = FakeSite(tmp_path)
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN)
    code = textwrap.dedent("""
        import sys, dlfree as dl
        before = sorted(m for m in sys.modules if m in ("acme_layers", "dlfree.builtin_plugins"))
        assert dl.plugins._state.pm is None
        names = dl.registry.layers.names()
        after = "acme_layers" in sys.modules
        print(before, names, after)
    """)
    # only the fake distribution: the first-party ones installed here register layers too
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "DLFREE_PLUGINS": "acme-layers"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[] ['Doubler'] True"


def test_entry_point_plugin_registers_with_its_provider(site):
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN, version="2.5")
    dl.registry.layers.reload()
    assert "Doubler" in dl.registry.layers
    assert dl.registry.layers.create("Doubler", factor=3).factor == 3
    provider = dl.registry.layers.provider("Doubler")
    assert provider["distribution"] == "acme-layers" and provider["version"] == "2.5"


def test_disable_autoload_keeps_builtins(site, monkeypatch):
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN)
    monkeypatch.setenv("DLFREE_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reload()
    assert "Doubler" not in dl.registry.layers
    assert "numpy" in dl.registry.backends


def test_dlfree_plugins_selects_distributions(site, monkeypatch):
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN)
    monkeypatch.setenv("DLFREE_PLUGINS", "someone-else")
    plugins.reload()
    assert "Doubler" not in dl.registry.layers
    monkeypatch.setenv("DLFREE_PLUGINS", "someone-else, acme-layers")
    plugins.reload()
    assert "Doubler" in dl.registry.layers


def test_broken_plugin_is_skipped_with_a_warning_naming_it(site):
    site.install("acme-broken", "acme_broken", "raise RuntimeError('boom at import')")
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN)
    with pytest.warns(PluginWarning, match=r"'acme-broken' failed to load.*RuntimeError: boom "
                                           r"at import; it is skipped"):
        plugins.reload()
    assert "Doubler" in dl.registry.layers


def test_strict_plugins_turns_failures_into_errors(site, monkeypatch):
    site.install("acme-broken", "acme_broken", "raise RuntimeError('boom at import')")
    monkeypatch.setenv("DLFREE_STRICT_PLUGINS", "1")
    with pytest.raises(dl.PluginError, match="acme-broken.*boom at import"):
        plugins.reload()
    monkeypatch.delenv("DLFREE_STRICT_PLUGINS")


def test_plugin_failing_to_register_contributes_nothing(site):
    site.install("acme-half", "acme_half", """
        import dlfree as dl

        class First: pass

        @dl.hookimpl
        def dlfree_register_layers(register):
            register(First)
            raise ValueError("second layer is broken")
    """)
    plugins.reload()
    with pytest.warns(PluginWarning, match="'acme-half' failed to register its layers.*second"):
        names = dl.registry.layers.names()
    assert "First" not in names


def test_duplicate_names_are_an_error_naming_both(site):
    for dist, module in (("acme-one", "acme_one"), ("acme-two", "acme_two")):
        site.install(dist, module, """
            import dlfree as dl

            class Conv: pass

            @dl.hookimpl
            def dlfree_register_layers(register):
                register(Conv)
        """)
    plugins.reload()
    with pytest.warns(PluginWarning, match="acme-one.*acme-two"):
        names = dl.registry.layers.names()
    assert "Conv" not in names
    with pytest.raises(dl.PluginError, match=r"layer 'Conv' is registered by more than one "
                                             r"plugin: acme-one .* and acme-two"):
        dl.registry.layers.get("Conv")


def test_first_party_map_matches_what_the_plugins_register():
    """The one map of first-party distributions names, for each, the subpackage it ships and
    exactly the registry kinds its plugin fills (checked here with every package installed)."""
    plugins.reload()
    filled: dict[str, set[str]] = {}
    for registry in dl.registry.ALL:
        for name in registry.names():
            dist = registry.provider(name)["distribution"]
            filled.setdefault(dist, set()).add(registry.kind)
    for dist, (subpackage, kinds) in first_party.DISTRIBUTIONS.items():
        assert filled.get(dist, set()) == set(kinds), dist
        entry_points = [plugins.plugin_info(name)["entry_point"]
                        for name, _ in plugins.manager().list_name_plugin()
                        if plugins.plugin_info(name)["distribution"] == dist]
        assert entry_points and all(f"= dlfree.{subpackage}." in ep for ep in entry_points), dist
    # the core: its backends and its ONNX mappings
    assert set(filled) - set(first_party.DISTRIBUTIONS) == {"dlfree"}
    assert filled["dlfree"] == {"backends", "onnx_ops"}


def test_unknown_names_name_the_distribution_or_close_matches(monkeypatch):
    monkeypatch.setenv("DLFREE_PLUGINS", "none")  # as if dlfree-nn and dlfree-optim were absent
    plugins.reload()

    class Plug:
        class Dense:
            pass

        @dl.hookimpl
        def dlfree_register_layers(register):
            register(Plug.Dense)

    name = dl.plugins.register(Plug)
    try:
        with pytest.raises(dl.PluginError, match=r"unknown layer 'LSTM': layers come from "
                                                 r"the distribution 'dlfree-nn'.*"
                                                 r"pip install dlfree-nn"):
            dl.registry.layers.get("LSTM")
        with pytest.raises(dl.PluginError, match=r"unknown optimizer 'Adamw': optimizers come "
                                                 r"from the distribution 'dlfree-optim'"):
            dl.registry.optimizers.get("Adamw")
        monkeypatch.delitem(first_party.KINDS, "layers")  # a kind with no first-party provider
        with pytest.raises(dl.PluginError, match=r"unknown layer 'Dence'; did you mean Dense"):
            dl.registry.layers.get("Dence")
    finally:
        dl.plugins.unregister(name)
        monkeypatch.delenv("DLFREE_PLUGINS")
        plugins.reload()
    assert "Dense" not in dl.registry.layers


def test_register_and_unregister_user_plugins():
    class MyPlugin:
        @dl.hookimpl
        def dlfree_register_metrics(register):
            register(dict, name="mapping")

    name = dl.plugins.register(MyPlugin, name="mine")
    assert dl.registry.metrics.get("mapping") is dict
    assert dl.registry.metrics.provider("mapping")["plugin"] == "mine"
    dl.plugins.unregister("mine")
    assert "mapping" not in dl.registry.metrics
    with pytest.raises(dl.PluginError, match="no registered plugin"):
        dl.plugins.unregister("mine")
    del name


def test_reload_sees_distributions_installed_later(site):
    assert "Doubler" not in dl.registry.layers
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN)
    assert "Doubler" not in dl.registry.layers
    dl.registry.layers.reload()
    assert "Doubler" in dl.registry.layers


def test_misspelled_hook_is_caught_by_check_pending():
    class Typo:
        @dl.hookimpl
        def dlfree_register_layer(register):  # missing "s"
            pass

    pm = plugins.manager()
    pm.check_pending()  # the built-ins implement only real hooks
    pm.register(Typo, name="typo")
    try:
        with pytest.raises(pluggy.PluginValidationError, match="dlfree_register_layer"):
            pm.check_pending()
    finally:
        pm.unregister(name="typo")


# ------------------------------------------------------------- every hookspec
class _Thing:
    pass


def _fake_backend():
    from dlfree.backends import NumpyBackend

    class FakeAccel(NumpyBackend):
        name = "fakeaccel"
        device_type = "fakeaccel"

    return FakeAccel


def _check_backends(got):
    from dlfree.device import _backends, _devices

    assert got is dl.registry.backends.get("fakeaccel")
    t = dl.ones(2, device="fakeaccel")  # a registered backend serves a new device type
    assert t.device.type == "fakeaccel" and (t * 2).tolist() == [2.0, 2.0]
    _backends.pop("fakeaccel")
    _devices.pop(("fakeaccel", 0))


HOOK_CASES = {
    "dlfree_register_backends": ("backends", "fakeaccel", _fake_backend, _check_backends),
    "dlfree_register_layers": ("layers", "_Thing", lambda: _Thing, None),
    "dlfree_register_losses": ("losses", "_Thing", lambda: _Thing, None),
    "dlfree_register_initializers": ("initializers", "half_", lambda: (lambda t: t), None),
    "dlfree_register_optimizers": ("optimizers", "_Thing", lambda: _Thing, None),
    "dlfree_register_schedulers": ("schedulers", "_Thing", lambda: _Thing, None),
    "dlfree_register_metrics": ("metrics", "_Thing", lambda: _Thing, None),
    "dlfree_register_architectures": ("architectures", "toy", lambda: _Thing, None),
    "dlfree_register_callbacks": ("callbacks", "_Thing", lambda: _Thing, None),
    "dlfree_register_onnx_ops": ("onnx_ops", "_thing", lambda: (lambda ctx: ctx.inputs[0]),
                                 None),
}


def _hookspecs() -> dict:
    """Every hookspec the plugin manager knows: the core's and those its plugins added
    (dlfree-train's training events, when it is installed), by name to the spec function."""
    pm = plugins.manager()
    return {name: caller.spec.function for name, caller in vars(pm.hook).items()
            if name.startswith("dlfree_") and caller.spec is not None}


def test_every_hookspec_has_a_test_and_a_documented_signature():
    import inspect

    docs = (ROOT / "docs" / "plugins.md").read_text()
    specs = _hookspecs()
    assert {n for n in dir(hookspecs) if n.startswith("dlfree_")} <= set(specs)
    # The training events are tested (each one called) in tests/train/test_train_events.py.
    train_events = {n for n in specs if n.startswith("dlfree_train_")}
    tested = set(HOOK_CASES) | {"dlfree_register_commands", "dlfree_add_hookspecs"} | \
        train_events
    assert set(specs) == tested, "each hookspec needs a case in HOOK_CASES"
    for name, function in specs.items():
        signature = f"{name}{inspect.signature(function)}"
        assert signature in docs, f"docs/plugins.md does not document {signature}"


@pytest.mark.parametrize("hook", sorted(HOOK_CASES))
def test_register_hook(hook):
    kind, name, make, check = HOOK_CASES[hook]
    obj = make()

    if kind == "architectures":
        def impl(register):
            register(name, dict, {"base": obj})
    elif kind in ("initializers", "onnx_ops"):
        def impl(register):
            register(obj, name)
    else:
        def impl(register):
            register(obj)

    plugin = type("Plugin", (), {hook: staticmethod(dl.hookimpl(impl))})
    registered = dl.plugins.register(plugin)
    try:
        registry = getattr(dl.registry, kind)
        got = registry.get(name)
        if kind == "architectures":
            assert got.config_cls is dict and got.heads == {"base": obj}
            assert registry.create(name, a=1) == {"a": 1}
        else:
            assert got is obj
        assert registry.provider(name)["plugin"] == registered
        if check:
            check(got)
    finally:
        dl.plugins.unregister(registered)


class GreetingSpecs:
    """Hooks of a plugin's own, for plugins that extend it."""

    @staticmethod  # (a spec in a class takes no self)
    @dl.hookspec
    def acme_greeting(name):
        """Return a greeting for `name`."""


class GreetingHost:
    @dl.hookimpl
    def dlfree_add_hookspecs(pluginmanager):
        pluginmanager.add_hookspecs(GreetingSpecs)


class Greeter:
    @dl.hookimpl
    def acme_greeting(name):
        return f"hello {name}"


def test_add_hookspecs_hook_adds_specs_for_plugins_registered_before_and_after():
    pm = plugins.manager()
    greeter = dl.plugins.register(Greeter)  # before the spec exists: checked when it comes
    host = dl.plugins.register(GreetingHost)  # historic: called although manager() ran
    try:
        assert pm.hook.acme_greeting.spec.function is GreetingSpecs.acme_greeting
        assert pm.hook.acme_greeting(name="you") == ["hello you"]
        pm.check_pending()

        class WrongArgument:
            @dl.hookimpl
            def acme_greeting(names):
                pass

        with pytest.raises(pluggy.PluginValidationError, match="names"):
            dl.plugins.register(WrongArgument)
    finally:
        dl.plugins.unregister(greeter)
        dl.plugins.unregister(host)
    plugins.reload()  # (a fresh manager, without the spec, for the other tests)
    assert not hasattr(plugins.manager().hook, "acme_greeting")


def test_a_plugin_whose_add_hookspecs_fails_is_skipped_whole(site):
    site.install("acme-badspecs", "acme_badspecs", """
        import dlfree as dl

        class Thing: pass

        @dl.hookimpl
        def dlfree_add_hookspecs(pluginmanager):
            raise RuntimeError("no specs today")

        @dl.hookimpl
        def dlfree_register_layers(register):
            register(Thing)
    """)
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN)
    with pytest.warns(PluginWarning, match=r"'acme-badspecs' failed to load.*no specs today"):
        plugins.reload()
    assert not plugins.manager().has_plugin("acme_badspecs")
    assert "Thing" not in dl.registry.layers and "Doubler" in dl.registry.layers


def test_command_hook_and_cli(capsys):
    class Commands:
        @dl.hookimpl
        def dlfree_register_commands(cli):
            p = cli.add_parser("greet")
            p.add_argument("who")
            p.set_defaults(func=lambda args: print(f"hi {args.who}"))

    name = dl.plugins.register(Commands)
    try:
        assert cli.main(["greet", "there"]) == 0
        assert capsys.readouterr().out.strip() == "hi there"
    finally:
        dl.plugins.unregister(name)


def test_cli_plugins_json_and_env(site, capsys):
    site.install("acme-layers", "acme_layers", LAYER_PLUGIN, version="3.1")
    plugins.reload()
    assert cli.main(["plugins", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["acme_layers"]["distribution"] == "acme-layers"
    assert rows["acme_layers"]["version"] == "3.1"
    assert rows["acme_layers"]["hooks"] == ["dlfree_register_layers"]
    assert rows["acme_layers"]["registers"] == {"layers": ["Doubler"]}
    assert rows["dlfree"]["registers"]["backends"] == ["cupy", "numpy"]
    assert cli.main(["plugins"]) == 0
    assert "acme_layers  (acme-layers 3.1)" in capsys.readouterr().out
    assert cli.main(["env"]) == 0
    env = capsys.readouterr().out
    assert "dlfree: " in env and "numpy (device type cpu): available" in env
    assert "devices: cpu" in env
    threads = f"cpu threads: {dl.get_num_threads()} (dl.set_num_threads); BLAS: "
    assert threads in env and "OPENBLAS_THREAD_TIMEOUT=" in env


def test_python_dash_m_dlfree():
    out = subprocess.run([sys.executable, "-m", "dlfree", "plugins"], capture_output=True,
                         text=True, check=True).stdout
    assert "dlfree  (dlfree " in out and "backends: cupy, numpy" in out


def test_cuda_availability_is_explained():
    if dl.cuda.is_available():
        pytest.skip("a GPU is present")
    reason = dl.cuda.unavailable_reason()
    assert "CuPy is not installed" in reason or "no CUDA GPU" in reason
    assert dl.cuda.device_count() == 0
    with pytest.raises(dl.DeviceError, match="device 'cuda' is not available: " + reason[:20]):
        dl.zeros(1, device="cuda")
