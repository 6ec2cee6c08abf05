"""Write packages/core/src/dlfree/tensor.pyi, `dlfree.tensor` as type checkers see it.

The ops bind their methods to `Tensor` at import (`tensor_method` in dlfree/ops/_util.py),
so an IDE or mypy reading tensor.py sees neither `Tensor.sum` nor `__add__`. A stub
replaces the module for them: this script imports dl.free and writes every class of
tensor.py with its own members and the methods the ops bound, each with the signature
of the function behind it (annotations as written, defaults as `...`).

    python scripts/gen_tensor_stub.py           rewrite the stub
    python scripts/gen_tensor_stub.py --check   exit 1, naming what differs, if it is stale

It lives here, not in the package: it is a development tool that the shipped code never
runs. tests/core/test_tensor_stub.py fails when the stub is stale.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import inspect
import sys
import types
from pathlib import Path

STUB = Path(__file__).resolve().parents[1] / "packages" / "core" / "src" / "dlfree" / "tensor.pyi"
COMMAND = "python scripts/gen_tensor_stub.py"

# What an annotation may name besides builtins and the stub's own classes, and the
# import that provides it. A new name fails the generation loudly, asking to be added.
IMPORTS = {
    "builtins": "import builtins",
    "Any": "from typing import Any",
    "Iterator": "from collections.abc import Iterator",
    "np": "import numpy as np",
    "dtypes": "from . import dtypes",
    "DType": "from .dtypes import DType",
    "Device": "from .device import Device",
    "Function": "from .autograd.function import Function",
    "GeqrfResult": "from .ops.householder import GeqrfResult",
}
# Unannotated op methods whose result is one tensor by their family's contract: the
# elementwise, comparison and cast ops, the in-place methods (they return self) and the
# operators. Elsewhere an unannotated result stays Any: `max(dim=)` is a pair and
# `nonzero(as_tuple=True)` a tuple.
TENSOR_RESULT_MODULES = {"dlfree.ops.elementwise", "dlfree.ops.comparison", "dlfree.ops.cast",
                         "dlfree.ops.inplace"}
# Class attributes that say what a class is rather than what its instances offer.
SKIP = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__",
        "__annotations__", "__orig_bases__", "__parameters__", "__firstlineno__",
        "__static_attributes__"}
# Slot wrappers taken from `object`, which carry no annotations.
WRAPPER_RESULTS = {"__hash__": "int"}
# Tensor's `==` and `!=` give a tensor where `object`'s give a bool, as in PyTorch.
OVERRIDES_OBJECT = {"__eq__", "__ne__"}


class _Text:
    """An annotation or default that inspect.Parameter prints as the given source text."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


ELLIPSIS = _Text("...")


class _Stub:
    """Collects the lines of the stub and the names its annotations use."""

    def __init__(self, module: types.ModuleType):
        self.classes = [v for v in vars(module).values()
                        if isinstance(v, type) and v.__module__ == module.__name__]
        self.defined = {c.__name__ for c in self.classes}
        self.used: set[str] = set()

    def annotation(self, text: str, where: str, members: set[str]) -> str:
        """`text` checked to name only what the stub can import; a builtin that a member
        of the class shadows (Tensor.float, Tensor.bool) is written `builtins.float`."""
        tree = ast.parse(text, mode="eval")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Name):
                continue
            if node.id in members and hasattr(builtins, node.id):
                node.id = f"builtins.{node.id}"  # unparsed as written
                self.used.add("builtins")
            elif not (hasattr(builtins, node.id) or node.id in self.defined):
                if node.id not in IMPORTS:
                    raise SystemExit(
                        f"{where}: the annotation {text!r} names {node.id!r}, which the stub "
                        f"does not import; add it to IMPORTS in {Path(__file__).name}")
                self.used.add(node.id)
        return ast.unparse(tree)

    def signature(self, fn, where: str, members: set[str], method: bool,
                  returns: str | None) -> str:
        """`(self, ...) -> R` for `fn`; the first parameter of a method is called self."""
        sig = inspect.signature(fn)
        name = where.rsplit(".", 1)[-1]
        operator = name.startswith("__") and name.endswith("__")
        params = []
        for p in sig.parameters.values():
            if p.name.startswith("_") and p.default is not p.empty:
                continue  # a default that binds a closure value (`_m=method`), not an argument
            if operator and p.kind is p.KEYWORD_ONLY:
                continue  # `a /= b` passes no `alpha=`: `__itruediv__` is `div_`
            ann = p.empty if p.annotation is p.empty else _Text(
                self.annotation(_text(p.annotation), where, members))
            default = p.empty if p.default is p.empty else ELLIPSIS
            params.append(p.replace(annotation=ann, default=default))
        if method:
            first = params[0] if params else None
            if first is not None and first.kind in (first.POSITIONAL_ONLY,
                                                    first.POSITIONAL_OR_KEYWORD):
                params[0] = first.replace(name="self", annotation=inspect.Parameter.empty)
            else:
                params.insert(0, inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY))
        if sig.return_annotation is not sig.empty:
            returns = _text(sig.return_annotation)
        returns = self.annotation(returns or "Any", where, members)
        return _format(name, params, returns)


def _format(name: str, params: list[inspect.Parameter], returns: str) -> str:
    """`(a, b) -> R`, or one parameter a line where `    def name(...): ...` would pass
    ruff's 100 characters."""
    pieces, positional_only, star = [], False, False
    for p in params:
        if positional_only and p.kind is not p.POSITIONAL_ONLY:
            pieces.append("/")
        positional_only = p.kind is p.POSITIONAL_ONLY
        if p.kind is p.KEYWORD_ONLY and not star:
            pieces.append("*")
        star = star or p.kind in (p.VAR_POSITIONAL, p.KEYWORD_ONLY)
        pieces.append(str(p))
    if positional_only:
        pieces.append("/")
    line = f"({', '.join(pieces)}) -> {returns}"
    if len(f"    def {name}{line}: ...") <= 100:
        return line
    return "(\n" + "".join(f"        {p},\n" for p in pieces) + f"    ) -> {returns}"


def _text(annotation) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _bound_by_ops(value) -> bool:
    fn = value.fget if isinstance(value, property) else value
    return isinstance(fn, types.FunctionType) and fn.__module__.startswith("dlfree.ops")


def _default_result(name: str, fn) -> str | None:
    """The result type of an op method whose function has no return annotation."""
    if not _bound_by_ops(fn):
        return None
    dunder = name.startswith("__") and name.endswith("__")
    inplace = name.endswith("_") and not dunder
    fn = fn.fget if isinstance(fn, property) else fn
    return "Tensor" if dunder or inplace or fn.__module__ in TENSOR_RESULT_MODULES else None


def _twin(cls: type, name: str, fn):
    """The out-of-place method whose parameters an in-place `name_(self, *args, **kwargs)`
    forwards (`clamp_` takes what `clamp` takes), or `fn` itself."""
    params = list(inspect.signature(fn).parameters.values())
    forwards = [p.kind for p in params[1:]] == [inspect.Parameter.VAR_POSITIONAL,
                                                inspect.Parameter.VAR_KEYWORD]
    twin = vars(cls).get(name[:-1]) if name.endswith("_") and forwards else None
    return twin if isinstance(twin, types.FunctionType) else fn


def _declarations(stub: _Stub, cls: type, name: str, value, names: set[str]) -> list[str]:
    """The stub lines that declare `cls.name`."""
    where = f"{cls.__name__}.{name}"
    if isinstance(value, property):
        getter = stub.signature(value.fget, where, names, True, _default_result(name, value))
        lines = ["@property", f"def {name}{getter}: ..."]
        if value.fset is not None:
            setter = stub.signature(value.fset, where, names, True, "None")
            lines += [f"@{name}.setter", f"def {name}{setter}: ..."]
        return lines
    if isinstance(value, (staticmethod, classmethod)):
        kind = type(value).__name__
        sig = stub.signature(value.__func__, where, names, kind == "classmethod", None)
        return [f"@{kind}", f"def {name}{sig}: ..."]
    if isinstance(value, types.FunctionType):
        sig = stub.signature(_twin(cls, name, value), where, names, True,
                             _default_result(name, value))
        ignore = "  # type: ignore[override]" if name in OVERRIDES_OBJECT else ""
        return [f"def {name}{sig}: ...{ignore}"]
    if isinstance(value, types.WrapperDescriptorType):
        returns = stub.annotation(WRAPPER_RESULTS.get(name, "Any"), where, names)
        return [f"def {name}(self) -> {returns}: ..."]
    return [f"{name}: {stub.annotation(type(value).__name__, where, names)}"]


def _members(stub: _Stub, cls: type) -> list[str]:
    """The class body: the annotated attributes and own members in the order of the source,
    then the methods the ops bound, by name."""
    annotations = inspect.get_annotations(cls)
    names = set(vars(cls)) | set(annotations)
    own = [f"{name}: {stub.annotation(text, f'{cls.__name__}.{name}', names)}"
           for name, text in annotations.items()]
    bound: list[tuple[str, list[str]]] = []
    for name in getattr(cls, "__slots__", ()):
        if name not in annotations and name not in SKIP:
            own.append(f"{name}: {stub.annotation('Any', name, names)}")
    for name, value in vars(cls).items():
        if name in SKIP or name in annotations or isinstance(value, types.MemberDescriptorType):
            continue
        lines = _declarations(stub, cls, name, value, names)
        if _bound_by_ops(value):
            bound.append((name, lines))
        else:
            own += lines
    if bound:
        own += ["", "# bound by dlfree.ops", *[ln for _, lines in sorted(bound) for ln in lines]]
    return ["    " + ln if ln else ln for ln in own or ["..."]]


def render() -> str:
    """The stub's text, from dl.free as it is imported now."""
    import dlfree  # noqa: F401  (binds the op methods)

    stub = _Stub(sys.modules["dlfree.tensor"])
    body = []
    for cls in stub.classes:
        bases = [b if isinstance(b, types.GenericAlias) else b.__name__
                 for b in getattr(cls, "__orig_bases__", cls.__bases__) if b is not object]
        head = f"class {cls.__name__}({', '.join(map(str, bases))}):" if bases else \
            f"class {cls.__name__}:"
        body += ["", head, *_members(stub, cls)]  # stubs: one blank line between classes
    header = ['"""`dlfree.tensor` for type checkers: tensor.py\'s classes with the methods that',
              "dlfree.ops binds to Tensor at import.",
              "",
              f'Generated by scripts/gen_tensor_stub.py; do not edit, rerun `{COMMAND}`."""']
    for section in _import_sections({IMPORTS[name] for name in stub.used}):
        header += ["", *section]
    return "\n".join(header + body) + "\n"


def _import_sections(imports: set[str]) -> list[list[str]]:
    """The imports in ruff's isort order: the standard library, NumPy, then the package's
    own modules; plain imports before `from` imports in each."""
    sections: list[list[str]] = [[], [], []]
    for line in imports:
        sections[2 if line.startswith("from .") else 1 if "numpy" in line else 0].append(line)
    return [sorted(s, key=lambda ln: (ln.startswith("from "), ln)) for s in sections if s]


def _members_of(text: str) -> dict[str, str]:
    """`Class.member` -> its declaration, from a stub's text."""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AnnAssign)):
                    name = item.name if isinstance(item, ast.FunctionDef) else \
                        ast.unparse(item.target)
                    key = f"{node.name}.{name}"
                    found[key] = found.get(key, "") + ast.unparse(item)
    return found


def differences(written: str, fresh: str) -> str:
    """What the written stub lacks, has in excess or declares differently, in words."""
    old, new = _members_of(written), _members_of(fresh)
    parts = []
    for label, names in [
        ("bound but missing from the stub", sorted(new.keys() - old.keys())),
        ("in the stub but no longer defined", sorted(old.keys() - new.keys())),
        ("declared differently", sorted(k for k in new.keys() & old.keys() if new[k] != old[k])),
    ]:
        if names:
            parts.append(f"{label}: {', '.join(names)}")
    if not parts:
        parts.append("the members agree, but the text differs (imports or order)")
    return (f"{STUB.name} is stale ({'; '.join(parts)}); regenerate it with `{COMMAND}`")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the stub differs from a fresh one")
    args = parser.parse_args()
    fresh = render()
    written = STUB.read_text() if STUB.exists() else ""
    if args.check:
        if written != fresh:
            print(differences(written, fresh), file=sys.stderr)
            return 1
        return 0
    if written != fresh:
        STUB.write_text(fresh)
        print(f"wrote {STUB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
