"""What a plugin may register under each registry kind, checked as it registers: a name that
is a non-empty string, and a class (a `Backend` subclass for backends; for architectures a
config class and a dict of head names to model classes) or, for initializers and ONNX
converters, a function.
Anything else is a `PluginError` naming the plugin's distribution, so a registry never
holds `42` under a layer's name."""

from __future__ import annotations

from .errors import PluginError


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _what(obj) -> str:
    return f"{obj!r:.60} ({_a(type(obj).__name__)})"


def check_name(kind: str, name, dist: str) -> str:
    if not isinstance(name, str) or not name:
        raise PluginError(f"the plugin from distribution {dist!r} registered {kind} under the "
                          f"name {_what(name)}; a name must be a non-empty string")
    return name


def check_entry(kind: str, noun: str, obj, dist: str) -> None:
    """Refuse `obj` as a `kind` entry (`noun` for one) from distribution `dist`."""
    if kind == "initializers":
        if not callable(obj):
            raise PluginError(f"the plugin from distribution {dist!r} registered "
                              f"{_what(obj)} as an initializer; an initializer is a function "
                              "that fills a tensor in place")
        return
    if kind == "onnx_ops":
        if not callable(obj):
            raise PluginError(f"the plugin from distribution {dist!r} registered "
                              f"{_what(obj)} as an ONNX converter; a converter is a function "
                              "of a dlfree.onnx.Context returning the name of its output")
        return
    if kind == "backends":
        from .backends.base import Backend

        if not (isinstance(obj, type) and issubclass(obj, Backend)):
            raise PluginError(f"the plugin from distribution {dist!r} registered "
                              f"{_what(obj)} as a backend; a backend is a subclass of "
                              "dlfree.backends.Backend")
        return
    if not isinstance(obj, type):
        raise PluginError(f"the plugin from distribution {dist!r} registered {_what(obj)} as "
                          f"{_a(noun)}; register the {noun} class itself")


def check_architecture(model_type, config_cls, heads, dist: str) -> None:
    """Refuse an architecture whose config class or head classes are not classes."""
    check_name("architectures", model_type, dist)
    if not isinstance(config_cls, type):
        raise PluginError(f"the plugin from distribution {dist!r} registered the architecture "
                          f"{model_type!r} with config class {_what(config_cls)}; give a class")
    if not isinstance(heads, dict) or not heads or not all(
            isinstance(k, str) and isinstance(v, type) for k, v in heads.items()):
        raise PluginError(f"the plugin from distribution {dist!r} registered the architecture "
                          f"{model_type!r} with heads {_what(heads)}; heads must be a non-empty "
                          "dict mapping head names to model classes")
