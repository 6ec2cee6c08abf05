"""A plugin cannot poison a registry: what `register` is given is checked (a class of the
kind, a Backend subclass, a function for initializers, a config class and head classes for
architectures) and anything else is a PluginError naming the distribution."""

from __future__ import annotations

import dlfree as dl
from dlfree.plugins import PluginWarning

import pytest


class _Layer:
    pass


def _plugin(hook: str, impl):
    return type("Plugin", (), {hook: staticmethod(dl.hookimpl(impl))})


BAD = {
    "layers": ("dlfree_register_layers", lambda register: register(42, name="fortytwo"),
               r"registered 42 \(an int\) as a layer; register the layer class itself"),
    "losses": ("dlfree_register_losses", lambda register: register(_Layer(), name="x"),
               r"as a loss; register the loss class itself"),
    "optimizers": ("dlfree_register_optimizers", lambda register: register(print, name="p"),
                   r"as an optimizer; register the optimizer class itself"),
    "backends": ("dlfree_register_backends", lambda register: register(_Layer, name="b"),
                 r"as a backend; a backend is a subclass of dlfree.backends.Backend"),
    "initializers": ("dlfree_register_initializers", lambda register: register(3.5, "half"),
                     r"registered 3.5 \(a float\) as an initializer"),
    "names": ("dlfree_register_metrics", lambda register: register(_Layer, name=7),
              r"under the name 7 \(an int\); a name must be a non-empty string"),
    "architectures": ("dlfree_register_architectures",
                      lambda register: register("toy", dict, {"base": "Model"}),
                      r"architecture 'toy' with heads .* heads must be a non-empty dict "
                      r"mapping head names to model classes"),
    "config": ("dlfree_register_architectures",
               lambda register: register("toy", {}, {"base": _Layer}),
               r"architecture 'toy' with config class \{\} \(a dict\); give a class"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_what_is_not_of_its_kind_is_refused_naming_the_distribution(case, monkeypatch):
    hook, impl, match = BAD[case]
    kind = {"names": "metrics", "config": "architectures"}.get(case, case)
    registry = getattr(dl.registry, kind)
    name = dl.plugins.register(_plugin(hook, impl), name="poison")
    try:
        with pytest.warns(PluginWarning, match=rf"distribution '<.*>'.*{match}.*skipped"):
            registry.names()
        assert not any(registry.provider(n)["plugin"] == "poison" for n in registry.names())
        monkeypatch.setenv("DLFREE_STRICT_PLUGINS", "1")
        dl.plugins.unregister(name)
        name = dl.plugins.register(_plugin(hook, impl), name="poison")
        with pytest.raises(dl.PluginError, match=match):
            registry.names()
    finally:
        monkeypatch.delenv("DLFREE_STRICT_PLUGINS", raising=False)
        dl.plugins.unregister(name)
