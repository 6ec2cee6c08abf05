"""tensor.pyi: type checkers see every method the ops bind to Tensor, as they are bound."""

from __future__ import annotations

import runpy
from pathlib import Path

import dlfree as dl

ROOT = Path(__file__).resolve().parents[2]
STUBGEN = runpy.run_path(str(ROOT / "scripts" / "gen_tensor_stub.py"))


def test_the_stub_declares_every_method_the_ops_bind_as_bound():
    written = STUBGEN["STUB"].read_text()
    fresh = STUBGEN["render"]()
    assert written == fresh, STUBGEN["differences"](written, fresh)


def test_a_method_bound_without_a_stub_is_named_with_the_command_that_adds_it(monkeypatch):
    def frobnicate(input, strength: float = 1.0, *, out=None):
        """An op of the elementwise family: its result is one tensor."""

    frobnicate.__module__ = "dlfree.ops.elementwise"
    monkeypatch.setattr(dl.Tensor, "frobnicate", frobnicate, raising=False)
    fresh = STUBGEN["render"]()
    assert ("    def frobnicate(self, strength: builtins.float = ..., *, out=...) -> Tensor: ..."
            in fresh.splitlines())
    message = STUBGEN["differences"](STUBGEN["STUB"].read_text(), fresh)
    assert "bound but missing from the stub: Tensor.frobnicate" in message
    assert "python scripts/gen_tensor_stub.py" in message


def test_the_stub_takes_signatures_from_the_bound_functions():
    lines = STUBGEN["STUB"].read_text().splitlines()
    # annotated in the source, the builtin spelled past Tensor.int and Tensor.bool
    assert ("    def sum(self, dim=..., keepdim: builtins.bool = ..., *, dtype=...) -> Tensor: ..."
            in lines)
    # an in-place method that forwards *args takes its out-of-place twin's parameters
    assert "    def clamp_(self, min=..., max=...) -> Tensor: ..." in lines
    # operators take their operands only: `a /= b` passes no alpha=
    assert "    def __itruediv__(self, other) -> Tensor: ..." in lines
    # a result that may be a tuple stays Any
    assert "    def max(self, dim=..., keepdim: builtins.bool = ...) -> Any: ..." in lines
    # tensor.py's own members and classes are declared too
    assert "    def shape(self) -> Size: ..." in lines and "class Parameter(Tensor):" in lines
