"""`dl.save` / `dl.load`: a model (weights and architecture) in one safetensors file.

The weights are stored under their `state_dict` names; the architecture (see
`architecture.py`) is JSON in the file's metadata. Loading rebuilds the model through
the registries and never unpickles anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ..errors import CheckpointError, PluginError
from ..tensor import Tensor
from ..version import __version__
from .architecture import decode, encode, is_module
from .tensors import load_tensors, save_tensors

FORMAT = "dlfree-model"
FORMAT_VERSION = "1"


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


def load(path: str | os.PathLike, device=None):
    """Read what `dl.save` wrote: the rebuilt model (in the training mode it was saved in),
    or the dict of tensors. `device` places it (the CPU by default). A corrupt, truncated
    or mismatching file raises `CheckpointError`; a layer from a plugin that is not
    installed raises `PluginError` naming the layer and its distribution."""
    weights, metadata = load_tensors(path, device=device)
    kind = metadata.get("format")
    if kind == "dlfree-tensors" or (kind is None and "architecture" not in metadata):
        return weights
    if kind != FORMAT:
        raise CheckpointError(f"{path} is a {kind!r} file, not a dl.free model file")
    try:
        architecture = json.loads(metadata["architecture"])
        training = json.loads(metadata.get("training", "false"))
    except (KeyError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: the model architecture in the metadata is unreadable "
                              f"({e})") from None
    try:
        model = decode(architecture, device=device)
    except (PluginError, CheckpointError):
        raise
    except Exception as e:
        raise CheckpointError(f"{path}: rebuilding the model from its architecture failed: "
                              f"{type(e).__name__}: {e}") from e
    try:
        model.load_state_dict(weights, strict=True)
    except CheckpointError as e:
        raise CheckpointError(f"{path}: the weights do not fit the architecture: {e}") from None
    if hasattr(model, "train"):
        model.train(bool(training))
    return model
