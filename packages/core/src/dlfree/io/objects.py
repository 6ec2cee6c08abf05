"""Nested objects of tensors (checkpoint dicts) as one safetensors file, without pickle.

What `torch.save` programs save, `{"model": m.state_dict(), "optimizer": opt.state_dict(),
"iter_num": i, "config": cfg}`, is a tree of dicts, lists and tuples whose leaves are
tensors, numbers, strings, booleans and None. The tensors go to the safetensors body, each
once (a tensor reached twice is stored once and comes back shared); the tree goes to the
metadata as JSON. Plain JSON values stand for themselves; a JSON object is always a tagged
node (`{"tensor": name}`, `{"list": [...]}`, `{"tuple": [...]}`, `{"dict": [[key, value],
...]}`), so dict keys keep their types (an optimizer's state is keyed by int).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping

import numpy as np

from ..errors import CheckpointError
from ..tensor import Tensor
from .limits import parse_json

FORMAT = "dlfree-objects"
FORMAT_VERSION = "1"

SUPPORTED = ("dl.Tensor", "dict", "list", "tuple", "int", "float", "bool", "str", "None")
_KEY_TYPES = "str, int, float, bool, None or a tuple of them"


class _Encoder:
    """Walks an object once, collecting its tensors by name and building the JSON tree."""

    def __init__(self) -> None:
        self.tensors: dict[str, Tensor] = {}
        self._names: dict[int, str] = {}  # id(tensor) -> its name, so shared ones store once
        self._open: set[int] = set()  # containers being walked: a cycle is refused

    def node(self, value, path: tuple):
        if value is None or isinstance(value, str | bool):
            return value
        if isinstance(value, numbers.Integral | np.integer | np.bool_):
            return value.item() if isinstance(value, np.generic) else int(value)
        if isinstance(value, float | np.floating):
            return float(value)
        if isinstance(value, Tensor):
            return self._tensor(value, path)
        if isinstance(value, Mapping | list | tuple):
            if id(value) in self._open:
                raise ValueError(f"dl.save: the object contains itself at {_where(path)}; "
                                 "a saved object must be a tree")
            self._open.add(id(value))
            try:
                if isinstance(value, Mapping):
                    return {"dict": [[self.key(k, path), self.node(v, (*path, k))]
                                     for k, v in value.items()]}
                kind = "list" if isinstance(value, list) else "tuple"
                return {kind: [self.node(v, (*path, i)) for i, v in enumerate(value)]}
            finally:
                self._open.discard(id(value))
        raise TypeError(f"dl.save: {_where(path)} is a {type(value).__module__}."
                        f"{type(value).__qualname__}, which dl.save does not store (it never "
                        f"pickles); supported: {', '.join(SUPPORTED)}, nested in any way; a "
                        "whole module is saved on its own as a model file")

    def key(self, key, path: tuple):
        if key is None or isinstance(key, str | bool | numbers.Integral | float):
            return self.node(key, path)
        if isinstance(key, tuple):
            return {"tuple": [self.key(k, path) for k in key]}
        raise TypeError(f"dl.save: a dict key at {_where(path)} is a {type(key).__name__}; "
                        f"keys must be {_KEY_TYPES}")

    def _tensor(self, t: Tensor, path: tuple) -> dict:
        name = self._names.get(id(t))
        if name is None:
            base = "/".join(str(p) for p in path) or "tensor"
            name, n = base, 1
            while name in self.tensors:
                n += 1
                name = f"{base}#{n}"
            self._names[id(t)] = name
            self.tensors[name] = t
        return {"tensor": name, "requires_grad": True} if t.requires_grad else {"tensor": name}


def _where(path: tuple) -> str:
    return "the object" + "".join(f"[{p!r}]" for p in path)


def encode(obj) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The tensors of `obj` by name and the metadata describing the tree around them."""
    encoder = _Encoder()
    tree = encoder.node(obj, ())
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "structure": json.dumps(tree, allow_nan=True)}
    return encoder.tensors, metadata


def decode(tensors: Mapping[str, Tensor], metadata: Mapping[str, str], source) -> object:
    """Rebuild the object `encode` described. A structure that is not valid JSON, names a
    tensor the file lacks, leaves a tensor unused or holds an unknown node is damage:
    `CheckpointError` naming `source`."""
    if metadata.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{source}: a dl.free object file of format version "
                              f"{metadata.get('format_version')!r}; this dl.free reads "
                              f"version {FORMAT_VERSION}")
    if "structure" not in metadata:
        raise CheckpointError(f"{source}: the metadata of a dl.free object file has no "
                              "structure")
    tree = parse_json(metadata["structure"], f"{source}: the object structure")
    used: set[str] = set()
    try:
        obj = _Decoder(tensors, used).node(tree)
    except RecursionError:
        raise CheckpointError(f"{source}: the object structure is nested too deeply") from None
    except _Damage as e:
        raise CheckpointError(f"{source}: the object structure is damaged: {e}") from None
    unused = sorted(set(tensors) - used)
    if unused:
        raise CheckpointError(f"{source}: the file holds tensors its structure does not "
                              f"place: {', '.join(unused)}")
    return obj


class _Damage(Exception):
    """A structure node that `encode` cannot have written."""


class _Decoder:
    def __init__(self, tensors: Mapping[str, Tensor], used: set[str]) -> None:
        self.tensors, self.used = tensors, used

    def node(self, node):
        if node is None or isinstance(node, str | bool | int | float):
            return node
        if not isinstance(node, dict) or len(node) not in (1, 2):
            raise _Damage(f"unexpected node {_short(node)}")
        if "tensor" in node:
            return self._tensor(node)
        if len(node) != 1:
            raise _Damage(f"unexpected node {_short(node)}")
        (kind, items), = node.items()
        if not isinstance(items, list):
            raise _Damage(f"a {kind!r} node holds {_short(items)}, not a list")
        if kind == "list":
            return [self.node(v) for v in items]
        if kind == "tuple":
            return tuple(self.node(v) for v in items)
        if kind == "dict":
            if not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
                raise _Damage("a dict's items must be [key, value] pairs")
            return {self._key(k): self.node(v) for k, v in items}
        raise _Damage(f"unknown node kind {kind!r}; valid: tensor, list, tuple, dict")

    def _key(self, node):
        key = self.node(node)
        try:
            hash(key)
        except TypeError:
            raise _Damage(f"a dict key {_short(node)} is not hashable") from None
        return key

    def _tensor(self, node: dict):
        name, requires_grad = node["tensor"], node.get("requires_grad", False)
        if set(node) - {"tensor", "requires_grad"} or not isinstance(requires_grad, bool):
            raise _Damage(f"unexpected tensor node {_short(node)}")
        if not isinstance(name, str) or name not in self.tensors:
            raise _Damage(f"it names a tensor {_short(name)} the file does not hold")
        self.used.add(name)
        t = self.tensors[name]
        if requires_grad and not t.requires_grad:
            t.requires_grad_(True)
        return t


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
