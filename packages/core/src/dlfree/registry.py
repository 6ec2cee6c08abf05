"""Registries: names to the things plugins provide (`dl.registry.layers.get("Linear")`).

Each registry is filled from one register-style hook on first access and refilled
when the set of plugins changes. Every name knows its provider (distribution and
version); a name provided twice is an error naming both distributions.
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any, NamedTuple

from . import first_party, plugins, registry_checks
from .errors import PluginError

__all__ = ["Registry", "Architecture", "backends", "layers", "losses", "initializers",
           "optimizers", "schedulers", "metrics", "architectures", "callbacks", "onnx_ops", "ALL"]


class Architecture(NamedTuple):
    """A model family: its config class and the model class for each head."""

    model_type: str
    config_cls: type
    heads: dict


class _Entry(NamedTuple):
    obj: Any
    plugin: str


class Registry:
    """Names to objects for one kind of plugin-provided thing."""

    def __init__(self, kind: str, noun: str):
        self.kind = kind
        self.noun = noun
        self.hook = f"dlfree_register_{kind}"
        self._entries: dict[str, _Entry] = {}
        self._conflicts: dict[str, list[str]] = {}
        self._generation = -1

    def __repr__(self) -> str:
        return f"<Registry {self.kind}: {len(self.names())} names>"

    # ------------------------------------------------------------------ filling
    def _register_callback(self, found: list, dist: str):
        if self.kind == "architectures":
            def register(model_type, config_cls, heads):
                registry_checks.check_architecture(model_type, config_cls, heads, dist)
                found.append((model_type, Architecture(model_type, config_cls, dict(heads))))
        elif self.kind in ("initializers", "onnx_ops"):
            def register(fn, name):
                registry_checks.check_entry(self.kind, self.noun, fn, dist)
                found.append((registry_checks.check_name(self.kind, name, dist), fn))
        else:
            def register(obj, name=None):
                registry_checks.check_entry(self.kind, self.noun, obj, dist)
                if name is None:
                    name = getattr(obj, "name", None) if self.kind == "backends" else None
                    name = name or getattr(obj, "__name__", None)
                found.append((registry_checks.check_name(self.kind, name, dist), obj))
        return register

    def _fill(self) -> None:
        pm = plugins.manager()
        entries: dict[str, _Entry] = {}
        conflicts: dict[str, list[str]] = {}
        for impl in getattr(pm.hook, self.hook).get_hookimpls():
            found: list = []
            dist = plugins.distribution_of(impl.plugin_name)
            callback = self._register_callback(found, dist)
            try:
                impl.function(**{arg: callback for arg in impl.argnames})
            except Exception as e:
                plugins.report_failure(dist, f"failed to register its {self.kind}", e)
                continue
            for name, obj in found:
                if name in entries and entries[name].obj is not obj:
                    conflicts.setdefault(name, [entries[name].plugin]).append(impl.plugin_name)
                    continue
                entries[name] = _Entry(obj, impl.plugin_name)
        self._entries, self._conflicts = entries, conflicts
        self._generation = plugins.generation()
        for name, owners in conflicts.items():
            warnings.warn(self._conflict_message(name, owners), plugins.PluginWarning,
                          stacklevel=4)

    def _current(self) -> dict[str, _Entry]:
        if self._generation != plugins.generation():
            self._fill()
        return self._entries

    def reload(self) -> None:
        """Discover plugins again (sees distributions installed since the process started)."""
        plugins.reload()
        self._fill()

    # ------------------------------------------------------------------- lookup
    def _conflict_message(self, name: str, owners: list[str]) -> str:
        dists = [f"{plugins.plugin_info(o)['distribution']} (plugin {o!r})" for o in owners]
        return (f"{self.noun} {name!r} is registered by more than one plugin: "
                f"{' and '.join(dists)}; uninstall one, or select plugins with DLFREE_PLUGINS")

    def _entry(self, name: str) -> _Entry:
        entries = self._current()
        if name in self._conflicts:
            raise PluginError(self._conflict_message(name, self._conflicts[name]))
        try:
            return entries[name]
        except KeyError:
            raise PluginError(self._unknown_message(name)) from None

    def _unknown_message(self, name: str) -> str:
        known = self.names()
        message = f"unknown {self.noun} {name!r}"
        dist = first_party.KINDS.get(self.kind)
        if dist is not None and not plugins.distribution_loaded(dist):
            return (f"{message}: {self.kind} come from the distribution {dist!r} (and from "
                    "third-party plugins), which is not installed or was not loaded; install "
                    f"it with: pip install {dist}")
        same_letters = [c for c in known if c.lower() == name.lower()]
        # each name once, those equal but for case first ("did you mean roberta, roberta?")
        close = list(dict.fromkeys(
            same_letters + difflib.get_close_matches(name, known, n=3, cutoff=0.6)))
        if close:
            message += f"; did you mean {', '.join(close)}?"
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        return message + (f" Registered {self.kind}: {shown}" if known else
                          f" No {self.kind} are registered: install a plugin that provides them")

    def get(self, name: str):
        """The object registered under `name`."""
        return self._entry(name).obj

    def create(self, name: str, **config):
        """Instantiate the object registered under `name` with `config`."""
        obj = self.get(name)
        if self.kind == "architectures":
            return obj.config_cls(**config)
        return obj(**config)

    def names(self) -> list[str]:
        return sorted(set(self._current()) - set(self._conflicts))

    def provider(self, name: str) -> dict:
        """Which plugin registered `name`: its distribution and version."""
        entry = self._entry(name)
        return {"plugin": entry.plugin, **plugins.plugin_info(entry.plugin)}

    def items(self) -> list[tuple[str, Any]]:
        entries = self._current()
        return [(n, entries[n].obj) for n in self.names()]

    def __contains__(self, name: str) -> bool:
        return name in self._current() and name not in self._conflicts

    def __iter__(self):
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


backends = Registry("backends", "backend")
layers = Registry("layers", "layer")
losses = Registry("losses", "loss")
initializers = Registry("initializers", "initializer")
optimizers = Registry("optimizers", "optimizer")
schedulers = Registry("schedulers", "scheduler")
metrics = Registry("metrics", "metric")
architectures = Registry("architectures", "architecture")
callbacks = Registry("callbacks", "callback")
onnx_ops = Registry("onnx_ops", "ONNX converter")

ALL = (backends, layers, losses, initializers, optimizers, schedulers, metrics, architectures,
       callbacks, onnx_ops)
