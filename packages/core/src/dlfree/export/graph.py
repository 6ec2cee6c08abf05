"""`Graph`: the static record of one traced call — nodes, parameters, constants, inputs and
outputs — runnable on arrays without autograd bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tensor import Tensor


@dataclass
class Node:
    """One recorded op: `op` is its Function class's name in lower case, `function` the class
    (its forward runs the node), `attributes` the keyword arguments it was applied with,
    `inputs` the value names it reads and `output` the value name it writes."""

    op: str
    function: type
    attributes: dict
    inputs: list[str]
    output: str

    def __str__(self) -> str:
        attrs = ", ".join(f"{k}={_short(v)}" for k, v in self.attributes.items())
        args = ", ".join(self.inputs) + (", " + attrs if attrs and self.inputs else attrs)
        return f"%{self.output} = {self.op}({args})"


@dataclass
class Graph:
    """A traced computation. `inputs` and `outputs` are value names; `input_shapes` holds
    each input's shape, a symbolic dim as its name (a str); `parameters` and `constants` map
    names to arrays (parameters are the model's weights and buffers, constants any other
    tensor the call read). Call it with arrays or Tensors, in the order of `inputs`, of the
    traced shapes (`example_shapes`): ops record sizes they saw (a reshape's target, a
    convolution's window), so a call at other sizes needs a new trace."""

    inputs: list[str]
    outputs: list[str]
    input_shapes: list[tuple]
    example_shapes: list[tuple]
    nodes: list[Node] = field(default_factory=list)
    parameters: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    device: object = None

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise TypeError(f"Graph: expected {len(self.inputs)} inputs "
                            f"({', '.join(self.inputs)}), got {len(args)}")
        values = dict(self.parameters)
        values.update(self.constants)
        for name, shape, arg in zip(self.inputs, self.example_shapes, args):
            array = arg._data if isinstance(arg, Tensor) else self.device.xp.asarray(arg)
            if tuple(array.shape) != tuple(shape):
                raise ValueError(f"Graph: input {name} has shape {tuple(array.shape)}; valid: "
                                 f"the traced shape {_shape_str(shape)} (trace again for "
                                 "other sizes)")
            values[name] = array
        for node in self.nodes:
            values[node.output] = run_node(node, [values[i] for i in node.inputs], self.device)
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


def run_node(node: Node, arrays: list, device):
    """Run one node's Function forward on arrays, as `Function.apply` would without
    recording."""
    fn = node.function.__new__(node.function)
    fn.xp = device.xp
    fn.device = device
    fn.needs_input_grad = None
    out = fn.forward(*arrays, **node.attributes)
    if type(out) is not device.array_type:
        out = device.xp.asarray(out)
    return out


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
