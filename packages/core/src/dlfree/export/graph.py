"""`Graph`: the static record of one traced call — nodes, parameters, constants, inputs and
outputs — runnable on arrays without autograd bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from ..tracing_state import TRACING
from .symbolic import SymInt, concrete


@dataclass
class Node:
    """One recorded op.

    `op` is its name (a Function class's name in lower case, or a `recorded` op's name),
    `function` the Function class or the recorded op, `attributes` the other arguments it was
    called with, `inputs` the value names it reads and `output` the value name it writes.
    `arg_names` names the parameter each input was passed as (None for a Function, whose
    inputs are positional). `symbolic` is `attributes` with the ints that follow the dynamic
    dims as `SymInt`s (None when none do). `layer` is the qualified name of the module whose
    forward called it ("" at the top)."""

    op: str
    function: object
    attributes: dict
    inputs: list[str]
    output: str
    arg_names: tuple | None = None
    symbolic: dict | None = None
    layer: str = ""

    def __str__(self) -> str:
        attrs = ", ".join(f"{k}={_short(v)}" for k, v in
                          (self.symbolic or self.attributes).items())
        args = ", ".join(self.inputs) + (", " + attrs if attrs and self.inputs else attrs)
        return f"%{self.output} = {self.op}({args})"


@dataclass
class Graph:
    """A traced computation.

    `inputs` and `outputs` are value names; `input_shapes` holds each input's shape, a
    dynamic dim as its name (a str); `parameters` and `constants` map names to arrays
    (parameters are the model's weights and buffers, constants any other tensor the call
    read). `shapes` and `dtypes` give every value's shape (dynamic sizes as `SymInt`s) and
    dtype. Call it with arrays or Tensors in the order of `inputs`: the fixed dims must be
    the traced ones, and the dynamic dims may take other sizes."""

    inputs: list[str]
    outputs: list[str]
    input_shapes: list[tuple]
    example_shapes: list[tuple]
    nodes: list[Node] = field(default_factory=list)
    parameters: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    device: object = None
    shapes: dict = field(default_factory=dict)
    dtypes: dict = field(default_factory=dict)

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise TypeError(f"Graph: expected {len(self.inputs)} inputs "
                            f"({', '.join(self.inputs)}), got {len(args)}")
        values = dict(self.parameters)
        values.update(self.constants)
        sizes: dict = {}
        for name, shape, arg in zip(self.inputs, self.input_shapes, args):
            array = arg._data if isinstance(arg, Tensor) else self.device.xp.asarray(arg)
            if len(array.shape) != len(shape) or any(
                    not isinstance(d, str) and d != n for d, n in zip(shape, array.shape)):
                raise ValueError(f"Graph: input {name} has shape {tuple(array.shape)}; valid: "
                                 f"the traced shape {_shape_str(shape)} (named dims may vary; "
                                 "trace again for other sizes)")
            for d, n in zip(shape, array.shape):
                if isinstance(d, str) and sizes.setdefault(d, n) != n:
                    raise ValueError(f"Graph: dynamic dim {d} has size {sizes[d]} in one input "
                                     f"and {n} in input {name}; valid: one size per name")
            values[name] = array
        fixed = all(tuple(a.shape) == tuple(s) for a, s in
                    zip((values[n] for n in self.inputs), self.example_shapes))
        for node in self.nodes:
            attributes = node.attributes if fixed or node.symbolic is None else \
                concrete(node.symbolic, sizes)
            values[node.output] = run_node(node, [values[i] for i in node.inputs],
                                           self.device, attributes)
        result = tuple(Tensor._make(values[o], self.device) for o in self.outputs)
        return result[0] if len(result) == 1 else result

    def __str__(self) -> str:
        lines = ["graph(" + ", ".join(f"%{n}: {_shape_str(s)}" for n, s in
                                      zip(self.inputs, self.input_shapes)) + "):"]
        for name, array in {**self.parameters, **self.constants}.items():
            kind = "param" if name in self.parameters else "const"
            lines.append(f"  {kind} %{name}: {array.dtype}{list(array.shape)}")
        lines.extend(f"  {node}" for node in self.nodes)
        lines.append("  return " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)

    def consumers(self) -> dict:
        """Value name -> the number of nodes (and graph outputs) reading it."""
        count: dict = {}
        for node in self.nodes:
            for i in node.inputs:
                count[i] = count.get(i, 0) + 1
        for o in self.outputs:
            count[o] = count.get(o, 0) + 1
        return count


def run_node(node: Node, arrays: list, device, attributes: dict | None = None):
    """Run one node on arrays, as `Function.apply` (or the recorded op) would without
    recording."""
    attributes = node.attributes if attributes is None else attributes
    if node.arg_names is not None:
        kwargs = dict(attributes)
        kwargs.update((n, Tensor._make(a, device)) for n, a in zip(node.arg_names, arrays))
        saved, TRACING.hook = TRACING.hook, None
        try:
            with no_grad():
                return node.function(**kwargs)._data
        finally:
            TRACING.hook = saved
    fn = node.function.__new__(node.function)
    fn.xp = device.xp
    fn.device = device
    fn.needs_input_grad = None
    out = fn.forward(*arrays, **attributes)
    if type(out) is not device.array_type:
        out = device.xp.asarray(out)
    return out


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = ["Graph", "Node", "SymInt", "run_node"]
