"""`dl.save` / `dl.load`: a model (weights and architecture) in one safetensors file.

The weights are stored under their `state_dict` names; the architecture (see
`architecture.py`) is JSON in the file's metadata. Loading rebuilds the model through
the registries and never unpickles anything.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping

from ..errors import CheckpointError
from ..tensor import Tensor
from ..version import __version__
from .architecture import decode, encode, is_module
from .limits import parse_json
from .schema import check_architecture, check_tensors_fit
from .tensors import load_tensors, save_tensors

FORMAT = "dlfree-model"
FORMAT_VERSION = "1"
# The metadata entries `save` writes: any other in a dl.free model file is damage.
MODEL_KEYS = {"format", "format_version", "dlfree_version", "architecture", "training"}
TENSORS_KEYS = {"format", "format_version"}


def save(obj, path: str | os.PathLike) -> None:
    """Write a model (a module: weights plus architecture) or a dict of tensors to `path`
    as one safetensors file, atomically. Every layer in the model must be registered
    (dlfree-nn's are), so `dl.load` can rebuild it."""
    if is_module(obj):
        architecture = encode(obj, type(obj).__name__)
        metadata = {"format": FORMAT, "format_version": FORMAT_VERSION,
                    "dlfree_version": __version__,
                    "architecture": json.dumps(architecture),
                    "training": json.dumps(bool(getattr(obj, "training", False)))}
        save_tensors(obj.state_dict(), path, metadata)
    elif isinstance(obj, Mapping) and all(isinstance(v, Tensor) for v in obj.values()):
        save_tensors(obj, path, {"format": "dlfree-tensors", "format_version": FORMAT_VERSION})
    else:
        raise TypeError(f"dl.save expects a module (with get_config and state_dict) or a dict "
                        f"of tensors, got {type(obj).__name__}")


def load(path: str | os.PathLike, device=None, verify: bool = True):
    """Read what `dl.save` wrote: the rebuilt model (in the training mode it was saved in),
    or the dict of tensors. `device` places it (the CPU by default).

    Every check of docs/files.md is made before the model is built: the path is a regular
    file, the data matches the digest written with it (`verify=False` skips hashing, for
    huge files you trust), the architecture is valid JSON within limits and of the schema
    `dl.save` writes, and the weights fit the rebuilt model in names, dtypes and shapes.
    Any failure is a `CheckpointError` naming the file; a layer from a plugin that is not
    installed is a `MissingPluginError` (a `PluginError` too) naming the layer and its
    distribution."""
    weights, metadata = load_tensors(path, device=device, verify=verify)
    kind = metadata.get("format")
    known = {FORMAT: MODEL_KEYS, "dlfree-tensors": TENSORS_KEYS}.get(kind)
    unknown = sorted(set(metadata) - known) if known is not None else []
    if unknown:
        raise CheckpointError(f"{path}: the metadata of a {kind} file has unknown entries "
                              f"{', '.join(map(repr, unknown))} (the file is damaged)")
    if kind == "dlfree-tensors" or (kind is None and "architecture" not in metadata):
        return weights
    if kind != FORMAT:
        raise CheckpointError(f"{path} is a {kind!r} file, not a dl.free model file")
    if metadata.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: model file format version "
                              f"{metadata.get('format_version')!r} is not supported (this "
                              f"dl.free reads version {FORMAT_VERSION})")
    if "architecture" not in metadata:
        raise CheckpointError(f"{path}: the metadata has no architecture")
    architecture = parse_json(metadata["architecture"], f"{path}: the architecture")
    training = parse_json(metadata.get("training", "false"), f"{path}: the training flag")
    if not isinstance(training, bool):
        raise CheckpointError(f"{path}: the training flag must be true or false, got "
                              f"{training!r:.40}")
    check_architecture(architecture, str(path),
                       sum(math.prod(t.shape) for t in weights.values()))
    try:
        model = decode(architecture, device=device)
    except CheckpointError as e:
        raise type(e)(f"{path}: {e}") from None
    except Exception as e:  # a layer's own validation of its arguments, or no memory for it
        raise CheckpointError(f"{path}: rebuilding the model from its architecture failed: "
                              f"{type(e).__name__}: {e}") from e
    if not is_module(model):
        raise CheckpointError(f"{path}: the architecture's root, the layer "
                              f"{architecture['$module']!r}, builds a {type(model).__name__}, "
                              "which is not a module (get_config and state_dict)")
    check_tensors_fit(weights, model.state_dict(), "the weights", str(path))
    model.load_state_dict(weights, strict=True)
    if hasattr(model, "train"):
        model.train(training)
    return model
