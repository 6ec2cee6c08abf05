"""Schema checks of what a file describes, made before anything is built from it: the
architecture JSON of a model file (only the entries `architecture.encode` writes, with sane
values), and saved tensors against the parameters and buffers they are to restore."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..dtypes import as_dtype
from ..errors import CheckpointError

# An int in a layer's config above both this and the file's number of weight elements would
# size a layer far beyond the weights that are to fill it: refused before allocating.
SMALL_INT = 2**16
FLOAT_WORDS = ("inf", "-inf", "nan")


def _fail(where: str, path: str, problem: str):
    raise CheckpointError(f"{where}: the architecture is invalid at {path}: {problem}")


class _ArchitectureCheck:
    def __init__(self, where: str, weight_elements: int):
        self.where = where
        self.int_bound = max(SMALL_INT, weight_elements)
        self.weight_elements = weight_elements
        self.placeholder_elements = 0

    def fail(self, path: str, problem: str):
        _fail(self.where, path, problem)

    def keys(self, data: dict, path: str, required: set, optional: frozenset = frozenset()):
        missing, unknown = required - set(data), set(data) - required - optional
        if missing or unknown:
            self.fail(path, "; ".join(part for part in (
                f"missing {', '.join(sorted(missing))}" if missing else "",
                f"unknown entries {', '.join(sorted(map(repr, unknown)))}" if unknown else "")
                if part))

    def text(self, value, path: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(path, f"expected a non-empty string, got {value!r:.80}")
        return value

    def node(self, value, path: str) -> None:
        if value is None or isinstance(value, (bool, str)):
            return
        if isinstance(value, int):
            if abs(value) > self.int_bound:
                self.fail(path, f"{value} is larger than the file's weights allow (at most "
                                f"{self.int_bound:,}, {self.weight_elements:,} weight elements)")
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(path, f"{value} is not a finite number")
            return
        if isinstance(value, list):
            for i, v in enumerate(value):
                self.node(v, f"{path}[{i}]")
            return
        if not isinstance(value, dict):
            self.fail(path, f"a {type(value).__name__} is not an architecture value")
        if len(value) == 0 or not next(iter(value), "").startswith("$"):
            self.fail(path, "a plain object; objects are tagged ($module, $tensor, $dtype, "
                            "$device, $tuple, $float or $dict)")
        tag = next(iter(value))
        check = getattr(self, "tag_" + tag[1:], None)
        if check is None:
            self.fail(path, f"unknown tag {tag!r}")
        check(value, path)

    def tag_module(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$module", "config"}, frozenset({"from"}))
        self.text(value["$module"], f"{path}.$module")
        if value.get("from") is not None:
            self.text(value["from"], f"{path}.from")
        config = value["config"]
        if not isinstance(config, dict):
            self.fail(f"{path}.config", f"expected an object, got {type(config).__name__}")
        for k, v in config.items():
            self.node(v, f"{path}.{k}")

    def tag_tensor(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$tensor"})
        spec = value["$tensor"]
        if not isinstance(spec, dict):
            self.fail(path, "$tensor must be an object with shape, dtype, parameter")
        self.keys(spec, path, {"shape", "dtype"}, frozenset({"parameter"}))
        shape = spec["shape"]
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            self.fail(f"{path}.shape", f"expected a list of sizes >= 0, got {shape!r:.80}")
        self.placeholder_elements += math.prod(shape)
        if self.placeholder_elements > self.weight_elements:
            self.fail(f"{path}.shape", f"tensors of {self.placeholder_elements:,} elements, "
                                       f"more than the file's {self.weight_elements:,} weights")
        self.dtype(spec["dtype"], f"{path}.dtype")
        if not isinstance(spec.get("parameter", False), bool):
            self.fail(f"{path}.parameter", "expected true or false")

    def dtype(self, name, path: str) -> None:
        try:
            as_dtype(self.text(name, path))
        except (TypeError, ValueError):
            self.fail(path, f"{name!r} is not a dtype")

    def tag_dtype(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$dtype"})
        self.dtype(value["$dtype"], f"{path}.$dtype")

    def tag_device(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$device"})
        self.text(value["$device"], f"{path}.$device")

    def tag_tuple(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$tuple"})
        if not isinstance(value["$tuple"], list):
            self.fail(path, "$tuple must be a list")
        self.node(value["$tuple"], path)

    def tag_float(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$float"})
        if value["$float"] not in FLOAT_WORDS:
            self.fail(path, f"$float must be one of {', '.join(FLOAT_WORDS)}")

    def tag_dict(self, value: dict, path: str) -> None:
        self.keys(value, path, {"$dict"})
        if not isinstance(value["$dict"], dict):
            self.fail(path, "$dict must be an object")
        for k, v in value["$dict"].items():
            self.node(v, f"{path}[{k!r}]")


def check_architecture(data, where: str, weight_elements: int) -> None:
    """Refuse (`CheckpointError` naming `where` and the entry) an architecture that is not
    a tree of the entries `architecture.encode` writes, whose root is not a module, or whose
    sizes exceed what `weight_elements` weights could fill."""
    if not isinstance(data, dict) or "$module" not in data:
        _fail(where, "the root", "expected a {\"$module\": ...} object")
    _ArchitectureCheck(where, weight_elements).node(data, "the model")


def check_tensors_fit(saved: Mapping, targets: Mapping, what: str, where: str) -> None:
    """Refuse `saved` tensors (by name) that are not exactly the `targets` they restore:
    names missing or unknown, or a dtype or shape that differs. `what` names the set
    ("the model weights"), `where` the file."""
    missing = [k for k in targets if k not in saved]
    unknown = [k for k in saved if k not in targets]
    problems = []
    if missing:
        problems.append(f"missing keys: {', '.join(missing)}")
    if unknown:
        problems.append(f"unexpected keys: {', '.join(unknown)}")
    for name, target in targets.items():
        value = saved.get(name)
        if value is None:
            continue
        dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
        if dtype is None or shape is None:
            problems.append(f"{name} is a {type(value).__name__}, not a tensor")
        elif dtype != target.dtype or tuple(shape) != tuple(target.shape):
            problems.append(f"{name} is {_named(dtype)} {tuple(shape)} in the file, "
                            f"{_named(target.dtype)} {tuple(target.shape)} here")
    if problems:
        raise CheckpointError(f"{where}: {what} do not fit: {'; '.join(problems)}")


def _named(dtype) -> str:
    return getattr(dtype, "name", str(dtype))
