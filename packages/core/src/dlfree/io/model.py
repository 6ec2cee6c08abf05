"""`dl.save` / `dl.load`: a model (weights and architecture) in one safetensors file, and
the dispatch to the other things they store (a dict of tensors, a nested object).

The weights are stored under their `state_dict` names; the architecture (see
`architecture.py`) is JSON in the file's metadata. Loading rebuilds the model through
the registries and never unpickles anything.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping
from typing import BinaryIO

from ..dtypes import as_dtype
from ..errors import CheckpointError, DTypeError
from ..tensor import Tensor
from ..version import __version__
from . import objects
from .architecture import decode, encode, is_module
from .limits import parse_json
from .rename import apply_rename
from .schema import check_architecture, check_tensors_fit
from .streams import check_target, is_stream, read_through_file, write_through_file
from .tensors import load_tensors, save_tensors

_log = logging.getLogger("dlfree.io")

FORMAT = "dlfree-model"
FORMAT_VERSION = "1"
# The metadata entries `save` writes: any other in a dl.free model file is damage.
MODEL_KEYS = {"format", "format_version", "dlfree_version", "architecture", "training"}
TENSORS_KEYS = {"format", "format_version"}


def save(obj, f: str | os.PathLike | BinaryIO) -> None:
    """Write `obj` to `f` (a path, written atomically, or an open binary file) as one
    safetensors file. A module is a model file (weights plus architecture; every layer in
    it must be registered, as dlfree-nn's are, so `dl.load` can rebuild it). Anything else
    is a tree of dicts, lists and tuples of tensors, numbers, strings, booleans and None,
    such as a checkpoint dict of state dicts (see `objects.py`); other objects are refused
    naming their type, since nothing is pickled."""
    check_target(f, "dl.save")
    if is_stream(f):
        write_through_file(f, lambda path: save(obj, path))
    elif is_module(obj):
        architecture = encode(obj, type(obj).__name__)
        metadata = {"format": FORMAT, "format_version": FORMAT_VERSION,
                    "dlfree_version": __version__,
                    "architecture": json.dumps(architecture),
                    "training": json.dumps(bool(getattr(obj, "training", False)))}
        save_tensors(obj.state_dict(), f, metadata)
    elif isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, Tensor)
                                          for k, v in obj.items()):
        save_tensors(obj, f, {"format": "dlfree-tensors", "format_version": FORMAT_VERSION})
    else:
        tensors, metadata = objects.encode(obj)
        save_tensors(tensors, f, metadata)


def load(f: str | os.PathLike | BinaryIO, device=None, dtype=None,
         rename: Mapping[str, str] | None = None, verify: bool = True):
    """Read what `dl.save` wrote to `f` (a path or an open binary file): the rebuilt model
    (in the training mode it was saved in, each tensor in the dtype it was saved in), the
    dict of tensors, or the saved object. `device` places the tensors (the CPU by
    default); `dtype` converts the floating ones. `rename` maps saved key names (or
    prefixes, see `rename.py`) to the names wanted, for a model file or a dict of tensors;
    what it renamed is logged on the `dlfree.io` logger.

    Every check of docs/files.md is made before the model is built: the path is a regular
    file, the data matches the digest written with it (`verify=False` skips hashing, for
    huge files you trust), the architecture is valid JSON within limits and of the schema
    `dl.save` writes, and the weights fit the rebuilt model in names, dtypes and shapes.
    Any failure is a `CheckpointError` naming the file; a layer from a plugin that is not
    installed is a `MissingPluginError` (a `PluginError` too) naming the layer and its
    distribution."""
    check_target(f, "dl.load")
    if is_stream(f):
        with read_through_file(f) as path:
            return load(path, device=device, dtype=dtype, rename=rename, verify=verify)
    path = f
    weights, metadata = load_tensors(path, device=device, verify=verify)
    kind = metadata.get("format")
    known = {FORMAT: MODEL_KEYS, "dlfree-tensors": TENSORS_KEYS}.get(kind)
    unknown = sorted(set(metadata) - known) if known is not None else []
    if unknown:
        raise CheckpointError(f"{path}: the metadata of a {kind} file has unknown entries "
                              f"{', '.join(map(repr, unknown))} (the file is damaged)")
    if dtype is not None:
        weights = convert_floating(weights, dtype)
    if kind == objects.FORMAT:
        if rename is not None:
            raise TypeError("dl.load: rename= applies to a model file or a dict of tensors; "
                            f"{path} holds a nested object: rename its state dicts with "
                            "load_state_dict(..., rename=...)")
        return objects.decode(weights, metadata, path)
    weights, renamed = apply_rename(weights, rename, f"dl.load({os.fspath(path)!r})")
    if renamed:
        _log.info("dl.load(%s) renamed %d keys: %s", os.fspath(path), len(renamed),
                  ", ".join(f"{k} -> {v}" for k, v in renamed.items()))
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
    _adopt_saved_dtypes(model, weights)
    check_tensors_fit(weights, model.state_dict(), "the weights", str(path))
    model.load_state_dict(weights, strict=True)
    if hasattr(model, "train"):
        model.train(training)
    return model


def convert_floating(tensors: Mapping[str, Tensor], dtype) -> dict[str, Tensor]:
    """`tensors` with the floating ones converted to `dtype` (integer ones kept)."""
    target = as_dtype(dtype)
    if not target.is_floating_point:
        raise DTypeError(f"dl.load(dtype=...): {target!r} is not a floating dtype; the "
                         "conversion applies to floating tensors only")
    return {k: v.to(target) if v.is_floating_point() else v for k, v in tensors.items()}


def _adopt_saved_dtypes(model, weights: Mapping[str, Tensor]) -> None:
    """Give each floating tensor of the rebuilt model the dtype its saved weights have, so a
    model saved after `.half()` loads back in float16 (loading alone would cast to the
    dtype the constructor chose)."""
    for key, target in model.state_dict(keep_vars=True).items():
        saved = weights.get(key)
        if (saved is not None and saved.is_floating_point() and target.is_floating_point()
                and saved.dtype is not target.dtype):
            target.data = target.data.to(saved.dtype)
