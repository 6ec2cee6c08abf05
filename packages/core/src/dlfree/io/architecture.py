"""A model's architecture as JSON: registered type names and constructor configs, nested.

A module (anything with `get_config()` and `state_dict()`, such as `dlfree.nn.Module`) is
written as `{"$module": name, "from": distribution, "config": {...}}`, where `name` is
the name its class is registered under in `dl.registry.layers` (or `.losses`), so the
file can be rebuilt wherever that plugin is installed. Tensors in a config become
placeholders (shape and dtype) whose values come from the file's weights; tuples,
dtypes and devices are tagged so they come back as they were.
"""

from __future__ import annotations

import inspect
import math

from .. import registry
from ..device import Device
from ..dtypes import DType, as_dtype
from ..errors import CheckpointError, MissingPluginError
from ..tensor import Tensor

KINDS = ("layers", "losses")


def is_module(value) -> bool:
    """Whether `value` follows the module protocol a model file needs."""
    return callable(getattr(value, "get_config", None)) and \
        callable(getattr(value, "state_dict", None))


def _registered_name(cls: type) -> tuple[str, str]:
    for kind in KINDS:
        table = getattr(registry, kind)
        for name, obj in table.items():
            if obj is cls:
                return name, table.provider(name)["distribution"]
    raise CheckpointError(
        f"cannot save a {cls.__module__}.{cls.__qualname__}: the class is not a registered "
        "layer, so a model file could not rebuild it; register it with a "
        "dlfree_register_layers hook (an entry point in the 'dlfree' group, or "
        "dl.plugins.register(plugin) in your code)")


def encode(value, where: str):
    """`value` as JSON-compatible data; `where` names it in errors (`Net.head.dropout`)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if is_module(value):
        name, dist = _registered_name(type(value))
        config = value.get_config()
        return {"$module": name, "from": dist,
                "config": {k: encode(v, f"{where}.{k}") for k, v in config.items()}}
    if isinstance(value, Tensor):
        return {"$tensor": {"shape": list(value.shape), "dtype": value.dtype.name,
                            "parameter": type(value).__name__ == "Parameter"}}
    if isinstance(value, DType):
        return {"$dtype": value.name}
    if isinstance(value, Device):
        return {"$device": str(value)}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise CheckpointError(f"cannot save {where}: dict keys must be strings, got "
                                  f"{bad[0]!r}")
        return {"$dict": {k: encode(v, f"{where}[{k!r}]") for k, v in value.items()}}
    raise CheckpointError(
        f"cannot save {where}: a {type(value).__name__} is not a value a model file can hold "
        "(JSON values, tuples, dtypes, devices, tensors and registered modules are); pass a "
        "name instead (e.g. activation='gelu') or override get_config()")


def _build(cls, config: dict, name: str):
    params = inspect.signature(cls).parameters.values()
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        unknown = sorted(set(config) - {p.name for p in params})
        if unknown:
            raise CheckpointError(f"the layer {name!r} takes no argument "
                                  f"{', '.join(map(repr, unknown))}")
    args, kwargs = [], {}
    for p in params:
        if p.name not in config:
            continue
        value = config[p.name]
        if p.kind is p.VAR_POSITIONAL:
            args.extend(value)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(value)
        elif p.kind is p.POSITIONAL_ONLY:
            args.append(value)
        else:
            kwargs[p.name] = value
    return cls(*args, **kwargs)


def decode(data, device=None):
    """Rebuild what `encode` wrote; modules come from the registries."""
    if isinstance(data, list):
        return [decode(v, device) for v in data]
    if not isinstance(data, dict):
        return data
    if "$module" in data:
        name = data["$module"]
        for kind in KINDS:
            table = getattr(registry, kind)
            if name in table.names():
                cls = table.get(name)
                break
        else:
            dist = data.get("from")
            hint = f"; it came from the distribution {dist!r}: pip install {dist}" \
                if dist and not dist.startswith("<") else \
                (f"; it was registered by {dist} when the file was written: register it "
                 "again before loading" if dist else "")
            raise MissingPluginError(f"the model file needs the layer {name!r}, which no "
                                     f"installed plugin registers{hint}")
        config = {k: decode(v, device) for k, v in data["config"].items()}
        return _build(cls, config, name)
    if "$tensor" in data:
        from ..creation import empty
        from ..tensor import Parameter

        spec = data["$tensor"]
        t = empty(*spec["shape"], dtype=as_dtype(spec["dtype"]), device=device)
        return Parameter(t) if spec.get("parameter") else t
    if "$dtype" in data:
        return as_dtype(data["$dtype"])
    if "$device" in data:
        return Device(device) if device is not None else Device(data["$device"])
    if "$tuple" in data:
        return tuple(decode(v, device) for v in data["$tuple"])
    if "$float" in data:
        return float(data["$float"])
    if "$dict" in data:
        return {k: decode(v, device) for k, v in data["$dict"].items()}
    raise CheckpointError(f"the model file's architecture has an unknown entry {data!r}")
